"""Every value ecobench reads from a Hugging Face ``config.json``, checked like a scenario field.

The numbers take the scenario's bounds (``ecobench.bounds``): a config with a million
layers, a negative ``n_inner`` or ``num_key_value_heads: 0.5`` is bad input before any work
starts, so the workload's size and memory stay bounded. Integers must be JSON integers (not
``true``, ``"12"`` or ``12.0``); flags must be ``true`` or ``false``.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any

from pydantic import Field

from ecobench import bounds as b
from ecobench.errors import InputError

__all__ = ["FIELDS", "check_fields"]

# BERT's segment vocabulary: 2 (BERT, LayoutLM), 1 (RoBERTa), 0 (none); 1,024 leaves room
TypeVocabSize = Annotated[int, Field(ge=0, le=1_024)]

# key -> bound (an Annotated int type), or bool / str for flags and names
FIELDS: dict[str, Any] = {
    "num_hidden_layers": b.Layers, "n_layer": b.Layers,
    "hidden_size": b.HiddenSize, "n_embd": b.HiddenSize, "head_dim": b.HiddenSize,
    "num_attention_heads": b.Heads, "n_head": b.Heads, "num_key_value_heads": b.Heads,
    "intermediate_size": b.IntermediateSize, "n_inner": b.IntermediateSize,
    "vocab_size": b.VocabSize,
    "max_position_embeddings": b.Tokens, "n_positions": b.Tokens,
    "type_vocab_size": TypeVocabSize,
    "tie_word_embeddings": bool, "attention_bias": bool,
    "model_type": str, "hidden_act": str,
}


def _limits(bound: Any) -> tuple[int, int]:
    _, info = typing.get_args(bound)
    ge = next(m.ge for m in info.metadata if hasattr(m, "ge"))
    le = next(m.le for m in info.metadata if hasattr(m, "le"))
    return ge, le


def _shown(v: Any) -> str:
    """A JSON value for a message, said in JSON's terms: text quoted with control characters escaped,
    ``true``/``false``, an integer's digit count past 20 digits, 'a JSON object'. Not
    :func:`ecobench.words.shown`, which cuts a value's Python text (``True``, ``{'a': 1}``) to 40
    characters and escapes nothing."""
    from ecobench.io.bounded import snippet

    if isinstance(v, str):
        return snippet(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int) and not isinstance(v, bool) and len(str(abs(v))) > 20:
        return f"an integer of {len(str(abs(v)))} digits"
    if isinstance(v, dict | list):
        return f"a JSON {'object' if isinstance(v, dict) else 'array'}"
    return repr(v)


def check_fields(cfg: dict[str, Any], where: str) -> None:
    """Raise :class:`InputError` (``where``, the key, the value, what is allowed and the nearest
    valid value) for the first value ecobench reads that is ill-typed or out of bounds; a missing
    or ``null`` value is left to the reader, which knows whether it is required."""
    for key, bound in FIELDS.items():
        v = cfg.get(key)
        if v is None:
            continue
        if bound is bool or bound is str:
            if not isinstance(v, bound):
                kind = "true or false" if bound is bool else "a string"
                raise InputError(f"{where}: field {key!r} is {_shown(v)}; allowed: {kind}")
            if bound is str and len(v) > 100:
                raise InputError(f"{where}: field {key!r} is {len(v):,} characters; at most 100")
            continue
        lo, hi = _limits(bound)
        if not isinstance(v, int) or isinstance(v, bool):
            near = f" (nearest valid: {min(max(round(v), lo), hi)})" if isinstance(v, float) else ""
            raise InputError(f"{where}: field {key!r} is {_shown(v)}; allowed: an integer {lo:,} to "
                             f"{hi:,}{near}")
        if not lo <= v <= hi:
            raise InputError(f"{where}: field {key!r} is {_shown(v)}; allowed: an integer {lo:,} to {hi:,} "
                             f"(nearest valid: {min(max(v, lo), hi):,})")
