"""Pydantic's validation errors as the one-line bad-input messages: each names the field path, what is
wrong and, for an unknown field, the nearest names and every one allowed there.

The schema imports this module (its sweep check explains a value's errors), so what the messages
need of the schema comes in as a :class:`Schema` (``ecobench.scenario.model.MESSAGE_SCHEMA``).
"""


import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel

from ecobench.bounds import NAME_ALLOWED, NAME_PATTERN, number_text
from ecobench.words import close_names as _close
from ecobench.words import did_you_mean, shown

__all__ = ["Schema", "describe_model", "did_you_mean", "error_lines"]


class Schema(NamedTuple):
    """What the messages read of the schema they explain."""

    fields: Callable[[], list[tuple[str, str, str]]]  # describe_fields: (path, default, description)
    names: Mapping[str, object]  # the schema module's namespace: a union branch named by its class


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if not isinstance(part, int) and len(str(part)) > 40:  # a key from the file: at most 40 characters
            part = f"{str(part)[:40]}..."
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


_UNION_TAG = re.compile(r"^(literal\[.*\]|constrained-\w+|int|float|str|bool|function-\w+\[.*\]|[A-Z]\w*)$")


def _format(err: dict[str, Any], schema: Schema) -> str:
    # an item inside the field (scenario/base.py's range check): (0,) in rates_per_h[0]
    item = tuple(err.get("ctx", {}).get("item", ())) if err["type"] == "item_out_of_range" else ()
    loc = _loc(tuple(p for p in err["loc"] if not _is_tag(p)) + item)
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = _unknown_field(tuple(p for p in err["loc"] if not _is_tag(p)), schema)
    if err["type"] == "string_pattern_mismatch" and err.get("ctx", {}).get("pattern") == NAME_PATTERN:
        msg = f"{err['input']!r} is not a name; allowed: {NAME_ALLOWED}"  # not the regular expression
    if not err["loc"] and err["type"] == "value_error":
        return msg  # a check across fields: its message names the fields
    bare = tuple(p for p in err["loc"] if not _is_tag(p))
    if err["type"] == "invalid_key":  # an unquoted YAML key read as a number or boolean (5:, true:)
        return _invalid_key(err.get("input"), bare, schema)
    if bare and bare[-1] == "[key]":  # the same in a mapping of values (dict[str, float]): its key's type
        return _invalid_key(err.get("input"), bare[:-1], schema)
    return f"{loc}: {_plain(err, bare, schema) or msg}"


def _invalid_key(key: object, loc: tuple[Any, ...], schema: Schema) -> str:
    """A mapping's key that is not text, said as what it is and what is allowed there: the level's
    field names, or any text (pydantic said '[5]: Keys should be strings', a boolean key as [1])."""
    written = "true" if key is True else "false" if key is False else shown(repr(key))
    kind = "a boolean" if isinstance(key, bool) else "a number" if isinstance(key, int | float) \
        else "not text"
    where = f"{_loc(loc[:-1])}: key {written} is {kind}"
    allowed = _allowed_here(loc, schema)
    if allowed:
        return f"{where}, not a field name; allowed here: {', '.join(allowed)}"
    return f"{where}, not text; allowed: a text key (quote it: '{written}')"


_NUMBER_TYPES = ("int_type", "int_parsing", "int_from_float", "float_type", "float_parsing")
_BOUNDS = {"greater_than_equal": ("ge", "at least"), "greater_than": ("gt", "more than"),
           "less_than_equal": ("le", "at most"), "less_than": ("lt", "less than")}


def _plain(err: dict[str, Any], loc: tuple[Any, ...], schema: Schema) -> str | None:
    """Pydantic's own wording ('Field required', 'Input should be a valid string') said as the value,
    what is wrong and what is allowed; None for an error kept in pydantic's words."""
    kind, ctx, value = err["type"], err.get("ctx", {}), err.get("input")
    written = shown(repr(value))
    if kind == "missing":
        what = _description(loc, schema)
        return f"missing; this field is required ({what})" if what else "missing; this field is required"
    if kind == "string_type":
        if isinstance(value, bool) and loc:  # YAML 1.1: an unquoted no, off, yes, on (region: no)
            quote = f"quote the value as written: {loc[-1]}: '...'"
            return f"{_yaml_boolean(value)}, not text; allowed: text ({quote})"
        if isinstance(value, int | float) and loc and _names_preset(loc):  # quoting it names no preset
            from ecobench.workloads.presets import PRESETS

            names = sorted(PRESETS)
            return (f"{written} is a number, not a model preset{did_you_mean(str(value), names)}; allowed: "
                    f"{', '.join(names)}")
        if isinstance(value, int | float) and loc:
            return f"{written} is a number, not text; allowed: text (quote it: {loc[-1]}: '{value}')"
        got = _written_kind(value, written)
        return f"{got}, not text; allowed: text"
    if kind in _NUMBER_TYPES:  # a strict number field (a gate document's), or a list where a number goes
        what = "an integer" if kind.startswith("int") else "a number"
        if isinstance(value, str) and _reads_as_number(value):
            return f"{written} is text, not a number; allowed: {what}, unquoted"
        got = _written_kind(value, written)
        return f"{got} is not {what}; allowed: {what}"
    if kind == "literal_error" and "expected" in ctx:  # pydantic's 'Input should be 'a' or 'b''
        choices = re.findall(r"'([^']*)'", str(ctx["expected"]))
        narrows = len(_close(str(value), choices)) < len(choices)  # no hint that names every choice
        hint = did_you_mean(str(value), choices) if narrows else ""
        if isinstance(value, bool):  # precision: on
            return f"{_yaml_boolean(value)}, not one of the names; allowed: {ctx['expected']}"
        return f"{written} is not allowed; allowed: {ctx['expected']}{hint}"
    if kind in ("model_type", "dict_type"):  # "Input should be a valid dictionary or instance of X"
        fields = _allowed_here((*loc, ""), schema)
        inner = f" ({', '.join(fields)})" if fields else ""
        return f"{_written_kind(value, written)}, not a mapping; allowed: a mapping of fields{inner}"
    if kind == "list_type":
        return f"{_written_kind(value, written)}, not a list; allowed: a list"
    if kind == "finite_number":
        return f"{written} is not a finite number; allowed: a finite number"
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        bound = ctx.get(key)
        number = isinstance(bound, int | float) and not isinstance(bound, bool)
        limit = number_text(bound) if number else bound  # 0, not a float field's 0.0
        return f"{written} is out of range; allowed: {words} {limit}"
    if kind in ("too_short", "too_long") and "actual_length" in ctx:
        short = kind == "too_short"
        words, n = ("at least", ctx.get("min_length")) if short else ("at most", ctx.get("max_length"))
        return f"has {ctx['actual_length']} items; allowed: {words} {n}"
    return None


def _names_preset(loc: tuple[Any, ...]) -> bool:
    """Whether the field at ``loc`` holds a model preset's name: workload.model, a drafter's draft_model."""
    return loc == ("workload", "model") or loc[-1] == "draft_model"


def _yaml_boolean(value: bool) -> str:
    """A boolean where text goes, said as YAML read it: the words it reads so unquoted."""
    words = "yes, on and true" if value else "no, off and false"
    return f"{str(value).lower()}, a boolean (YAML reads unquoted {words} as {str(value).lower()})"


def _written_kind(value: object, written: str) -> str:
    """A wrong-kind value in words: 'a list', 'a mapping', or the value itself ('spot', 5)."""
    return "a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict) else written


def _reads_as_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def describe_model(model: type[BaseModel], prefix: str = "") -> list[tuple[str, str, str]]:
    """(path, default, description) of a model's own fields, each path under ``prefix``: the rows of a
    :class:`Schema` for a file other than a scenario (a calibration file, a gate document)."""
    return [(prefix + name, "required" if f.is_required() else repr(f.get_default(call_default_factory=True)),
             f.description or "") for name, f in model.model_fields.items()]


def _description(loc: tuple[Any, ...], schema: Schema) -> str:
    """The schema's description of the field at ``loc`` (``configs[0].id`` is ``configs[].id``)."""
    path = ""
    for part in loc:
        path += "[]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return next((d for p, _, d in schema.fields() if p.removesuffix("[]") == path), "")


def _allowed_here(loc: tuple[Any, ...], schema: Schema) -> list[str]:
    """The field names allowed beside the field at ``loc`` (from ``schema.fields``, the schema's
    describe_fields; empty for a level it does not describe)."""
    parent = ""
    for part in loc[:-1]:
        parent += "[]" if isinstance(part, int) else (f".{part}" if parent else str(part))
    prefix = f"{parent}." if parent else ""
    return [path[len(prefix):].removesuffix("[]") for path, _, _ in schema.fields()
            if path.startswith(prefix) and "." not in path[len(prefix):]]


def _nearest(loc: tuple[Any, ...], allowed: list[str]) -> list[str]:
    """The allowed names nearest an unknown field's."""
    return _close(str(loc[-1]), allowed) if loc else []


def _unknown_field(loc: tuple[Any, ...], schema: Schema) -> str:
    """'unknown field', the nearest field names at that level and every one allowed there (a level
    ``schema.fields`` does not describe gets the bare message)."""
    allowed = _allowed_here(loc, schema)
    if not allowed or not loc:
        return "unknown field"
    return f"unknown field{did_you_mean(str(loc[-1]), allowed)} (allowed here: {', '.join(allowed)})"


def _explained(errors: list[dict[str, Any]], schema: Schema) -> list[dict[str, Any]]:
    """``errors`` without the missing fields that an unknown field beside them explains: a
    misspelt ``rate_per_h`` for ``requests_per_h`` is one problem, said once by the unknown field's
    line and its suggestion, not also as 'requests_per_h: Field required'."""
    def bare(e: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(p for p in e["loc"] if not _is_tag(p))

    meant = {(loc[:-1], name) for e in errors if e["type"] == "extra_forbidden" and (loc := bare(e))
             for name in _nearest(loc, _allowed_here(loc, schema))}
    return [e for e in errors
            if not (e["type"] == "missing" and (loc := bare(e)) and (loc[:-1], loc[-1]) in meant)]


def _is_tag(part: object) -> bool:
    """A union branch pydantic names in an error's location (``literal['auto']``, a model class)."""
    return isinstance(part, str) and bool(_UNION_TAG.match(part))


def error_lines(errors: list[dict[str, Any]], schema: Schema) -> list[str]:
    """One line per problem, without pydantic's union branches: where a value may be one of several
    kinds (``'auto'`` or a mapping), an error inside the mapping is the user's, else one line says
    which kinds are allowed."""
    groups: dict[tuple[object, ...], list[dict[str, Any]]] = {}
    plain = []
    for e in _explained(errors, schema):
        loc = tuple(e["loc"])
        tag = next((i for i, p in enumerate(loc) if _is_tag(p)), None)
        if tag is None:
            plain.append(_format(e, schema))
        else:
            groups.setdefault(loc[:tag], []).append(e)
    out = plain
    for base, errs in groups.items():
        deep = [e for e in errs if len(e["loc"]) > len(base) + 1]
        if deep:
            out += [_format(e, schema) for e in deep]
            continue
        checked = [e for e in errs if e["type"] == "value_error"]  # a mapping's own check: the user's
        if checked:
            out += [f"{_loc(base)}: {str(e['msg']).removeprefix('Value error, ')}" for e in checked]
            continue
        kinds, words = [], []
        for e in errs:
            branch = e["loc"][len(base)]
            if isinstance(branch, str) and branch.startswith("function-"):  # a model with an after-validator
                branch = branch.rstrip("]").rpartition(", ")[2]
            model = schema.names.get(branch) if isinstance(branch, str) else None
            if isinstance(model, type) and issubclass(model, BaseModel):
                kinds.append(f"a mapping of {', '.join(model.model_fields)}")
            else:
                kinds.append(str(e["msg"]).removeprefix("Input should be "))
                if e["type"] == "literal_error":
                    words += re.findall(r"'([^']*)'", str(e.get("ctx", {}).get("expected", "")))
        out.append(f"{_loc(base)}: {_not_one_of(errs[0].get('input'), kinds, words)}")
    return out


def _not_one_of(value: object, kinds: list[str], words: list[str]) -> str:
    """A value none of a field's kinds takes ('auto' or a mapping), what it is and what is allowed:
    ``'autoo' is not allowed; allowed: 'auto', or a mapping of ...; did you mean 'auto'?``."""
    hint = did_you_mean(value, words) if isinstance(value, str) else ""
    got = _written_kind(value, shown(repr(value)))
    return f"{got} is not allowed; allowed: {', or '.join(dict.fromkeys(kinds))}{hint}"
