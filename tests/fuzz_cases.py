"""Hypothesis strategies for bad input: scenario files and baseline/results documents.

Shared by tests/test_fuzz.py (bounded, in CI) and benchmarks/fuzz_inputs.py (thousands of cases).
Each case starts from a valid document and applies a few mutations: a field set to an extreme or
ill-typed value, a key removed or added, a name made hostile, or the text itself damaged
(duplicate keys, deep nesting, truncation, NaN literals, control characters).
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import yaml
from hypothesis import strategies as st

NASTY_NUMBERS = [math.inf, -math.inf, math.nan, 1e308, -1e308, 5e-324, -5e-324, 0, 0.0, -0.0, -1, 1,
                 2**31, 2**63, 10**30, 10_000_000, 1e-12, 0.5, 1.5, 100, 3600.0]
NASTY_TEXT = ["", ".", "..", "../../etc", "/abs", "a/b", "-rf", "x" * 300, "\x1b[31mred\x07",
              "![x](http://e/x.png)", "<script>", "名前", "\u202eevil", "con", "a b", "local",
              "inf1.xlarge", "analytic", "emulated", "reference", "fp32", "bf16", "spot", "on_demand"]

scalar = st.one_of(
    st.sampled_from(NASTY_NUMBERS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([10**400, -(10**400)]),
    st.sampled_from(NASTY_TEXT),
    st.text(max_size=40),
    st.none(),
    st.booleans(),
)
value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                     max_leaves=6)

INFERENCE: dict[str, Any] = {
    "schema_version": 1, "name": "fuzz", "description": "d",
    "workload": {"model": "bert-base",
                 "inference": {"rate_per_h": 100000, "seq_len": 128, "batch_size": 1, "horizon_h": 1.0,
                               "max_utilization": 0.8}},
    "configs": [{"id": "a", "instance_type": "inf1.xlarge", "precision": "bf16"},
                {"id": "b", "instance_type": "g4dn.xlarge", "precision": "fp16",
                 "price_usd_per_h": 0.5, "host_cpu_utilization": 0.5},
                {"id": "c", "instance_type": "c6i.2xlarge", "measured_throughput_per_s": 30.0}],
    "baseline": "b", "region": "us-east-1", "pue": 1.2,
    "pricing": {"model": "spot", "spot_discount_pct": 60},
    "overrides": {"grid_g_per_kwh": {"us-east-1": 300.0},
                  "accelerator_power_w": {"inferentia": {"idle_w": 10, "max_w": 60}}},
}
TRAINING: dict[str, Any] = {
    "schema_version": 1, "name": "fuzz_train",
    "workload": {"architecture": {"layers": 4, "hidden_size": 256, "heads": 4, "intermediate_size": 1024,
                                  "vocab_size": 30522, "max_position_embeddings": 512},
                 "training": {"total_sequences": 1e6, "batch_size": 16, "global_batch_size": 1024,
                              "phases": [{"seq_len": 128, "fraction": 0.9},
                                         {"seq_len": 512, "fraction": 0.1}]}},
    "configs": [{"id": "t", "instance_type": "trn1.32xlarge", "precision": "bf16", "instances": 2},
                {"id": "p", "instance_type": "p4d.24xlarge", "precision": "fp16", "instances": 1}],
    "baseline": "p",
}


def _limits_of(t: Any) -> tuple[float, float]:
    from ecobench.scenario.bounds import _limits

    return _limits(t)


def _edges() -> dict[str, list[tuple[tuple[Any, ...], Any]]]:
    """Paths of each base document, with the bounded type that limits them."""
    from ecobench.scenario import bounds as b

    w_inf = ("workload", "inference")
    inf = [(w_inf + ("rate_per_h",), b.RatePerH), (w_inf + ("seq_len",), b.Tokens),
           (w_inf + ("batch_size",), b.BatchSize), (w_inf + ("horizon_h",), b.HorizonH),
           (w_inf + ("max_utilization",), b.MaxUtilization), (("pue",), b.Pue),
           (("configs", 1, "price_usd_per_h"), b.PriceUsdPerH),
           (("configs", 2, "measured_throughput_per_s"), b.ThroughputPerS),
           (("configs", 1, "host_cpu_utilization"), b.HostCpuUtilization),
           (("pricing", "spot_discount_pct"), b.SpotDiscountPct),
           (("overrides", "grid_g_per_kwh", "us-east-1"), b.GridGPerKwh),
           (("overrides", "accelerator_power_w", "inferentia", "max_w"), b.MaxPowerW)]
    arch = ("workload", "architecture")
    w_tr = ("workload", "training")
    tr = [(arch + ("layers",), b.Layers), (arch + ("hidden_size",), b.HiddenSize),
          (arch + ("heads",), b.Heads), (arch + ("intermediate_size",), b.IntermediateSize),
          (arch + ("vocab_size",), b.VocabSize),
          (arch + ("max_position_embeddings",), b.Tokens), (w_tr + ("total_sequences",), b.TotalSequences),
          (w_tr + ("batch_size",), b.BatchSize), (w_tr + ("global_batch_size",), b.GlobalBatchSize),
          (("configs", 0, "instances"), b.Instances)]
    return {"fuzz": inf, "fuzz_train": tr}


@st.composite
def at_the_edges(draw: st.DrawFn) -> dict[str, Any]:
    """A valid scenario with some numbers at the ends of their documented ranges."""
    base = copy.deepcopy(draw(st.sampled_from([INFERENCE, TRAINING])))
    for path, t in draw(st.lists(st.sampled_from(_edges()[base["name"]]), min_size=1, max_size=4)):
        lo, hi = _limits_of(t)
        v = draw(st.sampled_from([lo, hi]))
        _apply(base, path, "set", int(v) if float(v).is_integer() and abs(v) < 2**53 else v)
    return base


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, prefix + (i,))
    return out


def _apply(doc: Any, path: tuple[Any, ...], op: str, new: Any) -> None:
    *head, last = path
    parent = doc
    for k in head:
        parent = parent[k]
    if op == "set":
        parent[last] = new
    elif op == "delete":
        del parent[last]
    elif op == "add" and isinstance(parent, dict):
        parent[f"extra_{len(parent)}"] = new


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """``base`` (a valid document) with one to four mutations."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["set", "set", "set", "delete", "add"]))
        try:
            _apply(doc, path, op, draw(value))
        except (KeyError, IndexError, TypeError):
            pass
    return doc


def _dump(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


@st.composite
def scenario_texts(draw: st.DrawFn) -> str:
    """A scenario file's text: a mutated scenario, sometimes with its text damaged."""
    if draw(st.integers(0, 4)) == 0:
        return _dump(draw(at_the_edges()))  # valid, at the limits: must run, with finite figures
    doc = draw(mutated(draw(st.sampled_from([INFERENCE, TRAINING]))))
    text = _dump(doc)
    damage = draw(st.sampled_from(["none", "none", "duplicate", "nest", "truncate", "inject", "inf"]))
    lines = text.splitlines(keepends=True)
    if damage == "duplicate" and lines:
        text += draw(st.sampled_from([ln for ln in lines if not ln.startswith(" ")] or lines))
    elif damage == "nest":
        depth = draw(st.integers(30, 600))
        text += "extra: " + "[" * depth + "]" * depth + "\n"
    elif damage == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    elif damage == "inject":
        at = draw(st.integers(0, len(text)))
        junk = ["\x00", "\x1b[2J", ": :", "- [", "&a *a", "!!python/name:os.system", "\t", "{", "? "]
        text = text[:at] + draw(st.sampled_from(junk)) + text[at:]
    elif damage == "inf":
        text = text.replace("100000", draw(st.sampled_from([".inf", "-.inf", ".nan", "1e400", "0x10"])))
    return text


@st.composite
def results_texts(draw: st.DrawFn, doc: dict[str, Any]) -> str:
    """A results/baseline document's text: mutated, sometimes with NaN literals or damage."""
    mut = draw(mutated(doc))
    try:
        text = json.dumps(mut, allow_nan=True)
    except (TypeError, ValueError):
        text = "{}"
    damage = draw(st.sampled_from(["none", "none", "nan", "dup_row", "nest", "truncate"]))
    if damage == "nan":
        text = text.replace("0.", draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "-0."])), 1)
    elif damage == "dup_row" and isinstance(mut, dict) and isinstance(mut.get("rows"), list) and mut["rows"]:
        mut["rows"].append(copy.deepcopy(mut["rows"][0]))
        text = json.dumps(mut, allow_nan=True)
    elif damage == "nest":
        depth = draw(st.integers(100, 5000))
        text = text[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}" if text.endswith("}") else text
    elif damage == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    return text
