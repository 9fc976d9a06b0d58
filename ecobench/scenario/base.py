"""The base of every scenario schema class: unknown fields refused, instances frozen, and a boolean,
a string that is no number (``rate_per_h: 1M``) or a number out of its field's range refused wherever
a number is expected, with what is allowed there (the whole range, not only the bound crossed).

Pydantic's lax mode reads YAML's ``true``/``false`` as 1/0 for an integer, a float or a numeric
choice (``zero: 1``), so ``input_tokens: true`` would plan one-token prompts. Strict mode refuses
booleans but also the numeric choices' and each number's other lax readings, and does not cover a
``Literal`` of numbers; this one check covers every numeric field, inside lists and mappings too.
"""


import functools
import math
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from ecobench.bounds import limits_text, open_limits, type_limits, whole_number
from ecobench.words import shown

__all__ = ["SchemaModel"]


class SchemaModel(BaseModel):
    """A scenario schema class (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str) and info.field_name is not None:
            return _check_number_text(cls, info.field_name, value)
        if isinstance(value, int | float) and not isinstance(value, bool) and info.field_name is not None:
            _check_range(cls, info.field_name, value)
            if isinstance(value, float) and not value.is_integer() and _integer_only(cls, info.field_name):
                raise ValueError(f"{value!r} is not a whole number; allowed: "
                                 f"{_numbers_allowed(cls, info.field_name)}")
            return value
        if value is None and info.field_name is not None and not _admits_none(cls, info.field_name):
            allowed = _numbers_allowed(cls, info.field_name)
            if allowed:  # pydantic says 'None is not a number': YAML's empty value, and no range
                raise ValueError(f"empty (null); allowed: {allowed}")
        if not isinstance(value, bool | list | dict) or info.field_name is None:
            return value  # the common case, kept cheap (a sweep validates thousands of configurations)
        allowed = _numbers_allowed(cls, info.field_name)
        found = _boolean_in(value) if allowed else None
        if found is not None:
            where, flag = found
            at = f"{where} is " if where else ""
            raise ValueError(f"{at}{str(flag).lower()}, a boolean, not a number; allowed: {allowed}")
        if allowed:
            _check_item_ranges(cls, info.field_name, value)
        return value


def _check_number_text(cls: type[SchemaModel], name: str, value: str) -> str | int:
    """Refuse text that is no number (``1M``, ``1,000,000``, ``10 ms``) in a field that holds only
    numbers, saying what is allowed (pydantic says only 'unable to parse string as a number'); an
    integer field's whole number is its integer (``input_tokens: 1e3``, which YAML leaves as text and
    pydantic reads into no integer), one with a fraction (``1.5e0``) is refused. So is an integer or a
    word field's (``max_batch: 6.4e1``, an integer or 'auto') text that is none of its words."""
    if _integer_or_word(cls, name) and repr(value) not in _kinds(cls.model_fields[name].annotation):  # type: ignore[operator]
        return _whole_text(cls, name, value)
    if not _numbers_only(cls, name):
        return value
    try:
        number = float(value)  # '1000000', '1e6' (YAML reads 1e6 without a dot as text) are numbers
    except ValueError:
        allowed = _numbers_allowed(cls, name)
        raise ValueError(f"{value[:40]!r} is not a number; allowed: {allowed}, in plain digits (1000000 or "
                         "1e6 for a million; no unit, suffix or separator)") from None
    _check_range(cls, name, number, value)
    if not _lax_integer(cls, name):
        return value
    whole = whole_number(value)
    if whole is None:
        raise ValueError(f"{shown(value)} is not a whole number; allowed: {_numbers_allowed(cls, name)}")
    return whole


def _whole_text(cls: type[SchemaModel], name: str, value: str) -> str | int:
    """The integer an integer-or-word field's text stands for (``6.4e1``: 64); text that is no number is
    left to pydantic, whose message lists the words; a fraction or a number out of range is refused."""
    try:
        number = float(value)
    except ValueError:
        return value
    limits = _bounded(cls, name)
    wrong = _range_problem(number, *limits[:2]) if limits is not None else None
    whole = whole_number(value)
    if wrong or whole is None:
        what = wrong or "is not a whole number"
        raise ValueError(f"{shown(value)} {what}; allowed: {_numbers_allowed(cls, name)}")
    return whole


@functools.cache
def _integer_or_word(cls: type[SchemaModel], name: str) -> bool:
    """Whether field ``name`` holds an integer or one of some words (``int | Literal['auto']``)."""
    t = cls.model_fields[name].annotation
    kinds = _kinds(t)
    words = {k for k in kinds or () if k.startswith("'")}
    return bool(words) and not _container(t) and kinds == {"int"} | words


@functools.cache
def _lax_integer(cls: type[SchemaModel], name: str) -> bool:
    """Whether field ``name`` holds an integer (or nothing) and reads text (a strict field, a gate
    document's schema_version, refuses text however it reads)."""
    field = cls.model_fields[name]
    strict = any(getattr(m, "strict", False) for m in field.metadata)
    return _kinds(field.annotation) == {"int"} and not strict


def _check_range(cls: type[SchemaModel], name: str, value: float, text: str | None = None) -> None:
    """Refuse a number outside a plain number field's bounds, or not finite (``.inf``, ``.nan``), saying
    the field's whole range (pydantic names only the bound crossed: 'Input should be greater than or
    equal to 0.001'); ``text`` is the value as written where it came as text ('1e300'). A value on an
    exclusive bound is left to pydantic's own check."""
    limits = _plain_limits(cls, name) or (_bounded(cls, name) if _integer_or_word(cls, name) else None)
    if limits is None:
        return
    lo, hi, allowed = limits
    wrong = _range_problem(value, lo, hi)
    if wrong:
        raise ValueError(f"{shown(text if text is not None else repr(value))} {wrong}; allowed: {allowed}")


def _range_problem(value: float, lo: float | None, hi: float | None) -> str | None:
    """What is wrong with a number against its bounds ('is not a finite number', 'is out of range'), or
    None."""
    if isinstance(value, float) and not math.isfinite(value):
        return "is not a finite number"
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        return "is out of range"
    return None


def _check_item_ranges(cls: type[SchemaModel], name: str, value: list[Any] | dict[Any, Any]) -> None:
    """Refuse the first number outside its bounds in a list or mapping of numbers, with the same message
    as a plain field's (:func:`_check_range`); the error's ``item`` context is where it is inside the
    value (``(0,)`` for ``rates_per_h[0]``), which the messages append to the field's path."""
    limits = _item_limits(cls, name)
    if limits is None:
        return
    lo, hi, allowed = limits
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        number = _as_number(item)
        if number is None:
            continue
        wrong = _range_problem(number, lo, hi)
        if wrong:
            written = shown(item if isinstance(item, str) else repr(item))
            raise PydanticCustomError("item_out_of_range", f"{written} {wrong}; allowed: {allowed}",
                                      {"item": (key if isinstance(value, list) else str(key),)})


def _as_number(item: Any) -> int | float | None:
    """``item`` as a number: an int or float (no boolean), or text that reads as one ('1e300', which YAML
    reads as text); None for anything else (left to pydantic)."""
    if isinstance(item, int | float) and not isinstance(item, bool):
        return item  # an int as it is: float(10**400) overflows
    if isinstance(item, str):
        try:
            return float(item)
        except ValueError:
            return None
    return None


@functools.cache
def _item_limits(cls: type[SchemaModel], name: str) -> tuple[float | None, float | None, str] | None:
    """(lowest, highest, what is allowed) of the items of a list or mapping of numbers with a bound;
    None for any other field."""
    field = cls.model_fields[name]
    kinds = _kinds(field.annotation)
    if not kinds or not kinds <= {"int", "float"} or not _container(field.annotation):
        return None
    return _bounded(cls, name)


@functools.cache
def _plain_limits(cls: type[SchemaModel], name: str) -> tuple[float | None, float | None, str] | None:
    """(lowest, highest, what is allowed) of a plain number field with a bound; None for any other."""
    return _bounded(cls, name) if _numbers_only(cls, name) else None


def _bounded(cls: type[SchemaModel], name: str) -> tuple[float | None, float | None, str] | None:
    """(lowest, highest, what is allowed) of a number field's type (its items' for a container); None
    where it has no bound."""
    field = cls.model_fields[name]
    lo, hi = type_limits(field.annotation, field.metadata)
    allowed = _numbers_allowed(cls, name)
    return None if (lo is None and hi is None) or allowed is None else (lo, hi, allowed)


@functools.cache
def _admits_none(cls: type[SchemaModel], name: str) -> bool:
    """Whether field ``name`` of ``cls`` may be null (``Optional``, ``X | None`` or ``Any``)."""
    return _none_in(cls.model_fields[name].annotation)


def _none_in(t: Any) -> bool:
    if t is Any or t is type(None):
        return True
    origin = get_origin(t)
    if origin is Annotated:
        return _none_in(get_args(t)[0])
    return origin in (Union, types.UnionType) and any(_none_in(a) for a in get_args(t))


@functools.cache
def _integer_only(cls: type[SchemaModel], name: str) -> bool:
    """Whether field ``name`` of ``cls`` holds an integer and nothing else (``instances``)."""
    return _kinds(cls.model_fields[name].annotation) == {"int"}


@functools.cache
def _numbers_only(cls: type[SchemaModel], name: str) -> bool:
    """Whether field ``name`` of ``cls`` is a plain number: no string choice, no other kind, no list or
    mapping (whose own message, 'a valid list', says what goes there)."""
    t = cls.model_fields[name].annotation
    kinds = _kinds(t)
    return bool(kinds) and kinds <= {"int", "float"} and not _container(t)  # type: ignore[operator]


def _container(t: Any) -> bool:
    """Whether type ``t`` is, or may be, a list or a mapping."""
    origin = get_origin(t)
    if origin in (list, dict):
        return True
    args = get_args(t)[:1] if origin is Annotated else get_args(t) if origin in (Union, types.UnionType) \
        else ()
    return any(_container(a) for a in args)


@functools.cache
def _numbers_allowed(cls: type[SchemaModel], name: str) -> str | None:
    """What field ``name`` of ``cls`` allows where it holds numbers and no boolean (its lists' and
    mappings' items included), e.g. 'an integer from 1 to 16,777,216'; None where it may hold a
    boolean, a model (whose own fields are checked) or any value, or holds no number."""
    field = cls.model_fields[name]
    kinds = _kinds(field.annotation)
    if kinds is None or not kinds & {"int", "float"} and not any(k.startswith("one of") for k in kinds):
        return None
    parts = []
    if kinds & {"int", "float"}:
        lo, hi = type_limits(field.annotation, field.metadata)
        open_lo, open_hi = open_limits(field.annotation, field.metadata)
        if "float" not in kinds:  # an integer above 0 is one of at least 1 (trial18)
            if open_lo and lo is not None:
                lo, open_lo = math.floor(lo) + 1, False
            if open_hi and hi is not None:
                hi, open_hi = math.ceil(hi) - 1, False
        kind = "an integer" if "float" not in kinds else "a number"
        parts.append(kind + limits_text(lo, hi, open_lo, open_hi))
    parts += sorted(k for k in kinds if k.startswith(("one of", "'")))
    return " or ".join(parts)


def _kinds(t: Any) -> set[str] | None:
    """The scalar kinds type ``t`` holds: 'int', 'float', 'one of 0, 1, 2, 3' (numeric choices), a
    quoted string choice, 'other' (nothing for None); None where a boolean, a model or any value may
    stand."""
    if t is bool or t is Any or isinstance(t, type) and issubclass(t, BaseModel):
        return None
    origin, args = get_origin(t), get_args(t)
    if origin is Literal:
        if any(isinstance(a, bool) for a in args):
            return None
        numeric = [str(a) for a in args if isinstance(a, int | float)]
        return ({"one of " + ", ".join(numeric)} if numeric else set()) | {
            repr(a) for a in args if isinstance(a, str)}
    if origin is Annotated:
        return _kinds(args[0])
    if origin is dict:
        return _kinds(args[1]) if args else None
    if origin in (list, Union, types.UnionType):
        out: set[str] = set()
        for a in args or (Any,):
            k = _kinds(a)
            if k is None:
                return None
            out |= k
        return out
    if t is type(None):
        return set()  # Optional: a missing value is never text
    return {"int"} if t is int else {"float"} if t is float else {"other"}


def _boolean_in(value: Any, where: str = "") -> tuple[str, bool] | None:
    """(where, the boolean) for the first boolean in ``value`` (a scalar, list or mapping): where is
    '' for ``value`` itself, '[3]' or '[key]' inside it; None where there is none."""
    if isinstance(value, bool):
        return where, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _boolean_in(item, f"{where}[{str(key)[:40]}]")  # a key from the file: short
        if found is not None:
            return found
    return None
