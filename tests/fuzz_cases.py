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
import os
from dataclasses import dataclass, field
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
    from ecobench.bounds import type_limits

    lo, hi = type_limits(t)
    assert lo is not None and hi is not None, t  # every edge type is bounded at both ends
    return lo, hi


def _edges() -> dict[str, list[tuple[tuple[Any, ...], Any]]]:
    """Paths of each base document, with the bounded type that limits them."""
    from ecobench import bounds as b

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


# --- The whole surface (issue 24): every kind of file a user hands ecobench, and its command ---

SERVING: dict[str, Any] = {
    "schema_version": 2, "name": "fuzz_serve",
    "workload": {"model": "llama3-8b",
                 "serving": {"requests_per_h": 3600, "input_tokens": 512, "output_tokens": 128,
                             "ttft_ms": 2000, "tpot_ms": 100, "ttft_p99_ms": 6000, "horizon_h": 1.0}},
    "configs": [{"id": "g6e", "instance_type": "g6e.xlarge", "precision": "bf16"},
                {"id": "q", "instance_type": "g6e.xlarge", "precision": "bf16", "weight_precision": "int8",
                 "parallelism": {"tensor": 1}}],
    "baseline": "g6e", "region": "us-east-1",
}
HF_CONFIGS: list[dict[str, Any]] = [
    {"model_type": "llama", "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_size": 512,
     "intermediate_size": 1024, "vocab_size": 32000, "max_position_embeddings": 2048, "num_hidden_layers": 4,
     "hidden_act": "silu", "tie_word_embeddings": False},
    {"model_type": "gpt2", "n_embd": 256, "n_head": 4, "n_layer": 2, "n_inner": None, "vocab_size": 50257,
     "n_positions": 1024},
    {"model_type": "bert", "num_attention_heads": 4, "hidden_size": 256, "intermediate_size": 1024,
     "vocab_size": 30522, "max_position_embeddings": 512, "num_hidden_layers": 2, "type_vocab_size": 2},
]
SYSFS_LINE = "POWER_STATUS_VALID,1732550400,10.00,40.00,25.00"


@dataclass
class Case:
    """One generated input: files to write in a fresh folder, the command (``{d}``: that folder) and
    the exit codes that count as a clean end."""

    kind: str
    files: dict[str, str]
    args: list[str]
    allowed: tuple[int, ...] = (0, 2)
    dirs: list[str] = field(default_factory=list)
    specials: dict[str, str] = field(default_factory=dict)  # name -> fifo | loop | dir | devzero


SPECIALS = ["fifo", "loop", "dir", "devzero", "empty"]


def _special(case: Case, name: str, kind: str) -> Case:
    """``case`` with its file ``name`` replaced by something that is not a readable regular file."""
    case.files.pop(name, None)
    case.specials[name] = kind
    return case


def _scenario_with(doc: dict[str, Any], **files: str) -> Case:
    return Case("", {"s.yaml": _dump(doc), **files}, ["run", "{d}/s.yaml", "-q", "--results", "{d}/results"])


@st.composite
def hf_config_texts(draw: st.DrawFn) -> tuple[str, str]:
    """(text of a config.json, its model_type family) mutated and sometimes damaged."""
    base = draw(st.sampled_from(HF_CONFIGS))
    doc = draw(mutated(base)) if draw(st.booleans()) else copy.deepcopy(base)
    for _ in range(draw(st.integers(0, 2))):
        key = draw(st.sampled_from(sorted(base)))
        doc[key] = draw(st.sampled_from([-1, 0, 0.5, True, "12", None, 10**6, 10**400, [], {}, 1e308]))
    try:
        text = json.dumps(doc, allow_nan=True)
    except (TypeError, ValueError):
        text = "{}"
    damage = draw(st.sampled_from(["none", "none", "nest", "truncate", "huge_int", "bom", "nan"]))
    if damage == "nest":
        depth = draw(st.sampled_from([20, 200, 5_000, 100_000]))
        text = text[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}" if text.endswith("}") else text
    elif damage == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    elif damage == "huge_int":
        text = text.replace("2", "9" * draw(st.sampled_from([30, 400, 5000])), 1)
    elif damage == "bom":
        text = "\ufeff" + text
    elif damage == "nan":
        text = text.replace("4", draw(st.sampled_from(["NaN", "Infinity", "1e400"])), 1)
    return text, str(base["model_type"])


@st.composite
def profile_csv_texts(draw: st.DrawFn) -> str:
    """A load-profile CSV: a good one with some rows or the header damaged."""
    header = draw(st.sampled_from(["hour,rate_per_h", "hour,requests_per_h", "hour , rate_per_h", "h,rate",
                                   "root:x:0:0:root:/root:/bin/bash", "", "hour;rate_per_h",
                                   "\ufeffhour,rate_per_h"]))
    rows = [f"{h},{draw(st.sampled_from(['100', '0', '1e6', '5.5']))}" for h in range(24)]
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, 23))
        rows[i] = draw(st.sampled_from([
            f"{i},1e-320", f"{i},-5", f"{i},inf", f"{i},nan", f"{i},1e13", f"{i}", f"{i},5,extra",
            f"{i}.5,5", "24,5", f"{i},{'9' * 400}", f"{i},\x00", f'"{i}",5', f"{i},\uff15", "", "\x1b[2J",
            f"{i}," + "x" * 5000, "0,5"]))
    if draw(st.booleans()):
        rows = rows[: draw(st.integers(0, 24))]
    return "\n".join([header, *rows]) + "\n"


@st.composite
def sysfs_texts(draw: st.DrawFn) -> str:
    """A Neuron sysfs utilization file: good, or one field damaged."""
    parts = SYSFS_LINE.split(",")
    for _ in range(draw(st.integers(0, 2))):
        i = draw(st.integers(0, 4))
        parts[i] = draw(st.sampled_from(["inf", "-1", "nan", "1e400", "", "x" * 200, "101",
                                         "POWER_STATUS_NO_DATA", "POWER_STATUS_INVALID", "\x1b[31m",
                                         "99999999999999999999", "5e-324"]))
    text = ",".join(parts)
    if draw(st.integers(0, 5)) == 0:
        text = draw(st.sampled_from(["", "\n\n", text + "," + text, text * 100, "\x00" * 10]))
    return text + "\n"


@st.composite
def surface_cases(draw: st.DrawFn, run_dir: str, doc: dict[str, Any]) -> Case:
    """One input across the whole surface: scenarios (inference, training, serving, sweeps,
    parallelism), HF configs, profile CSVs, Neuron sysfs trees, results files for compare, report
    and check."""
    kind = draw(st.sampled_from(["scenario", "serving", "sweep", "parallelism", "hf_config", "hf_workload",
                                 "profile_csv", "sysfs", "compare", "report", "check"]))
    if kind == "scenario":
        case = Case("", {"s.yaml": draw(scenario_texts())}, ["run", "{d}/s.yaml", "-q", "--results",
                                                             "{d}/results"])
    elif kind == "serving":
        if draw(st.booleans()):  # valid, varied: must run (Hypothesis runs an identical case once)
            doc = copy.deepcopy(SERVING)
            srv = doc["workload"]["serving"]
            srv["requests_per_h"] = draw(st.sampled_from([1, 360, 36_000, 3_600_000]))
            srv["input_tokens"] = draw(st.sampled_from([1, 128, 4096]))
            srv["output_tokens"] = draw(st.sampled_from([1, 64, 1024]))
            srv["ttft_ms"], srv["tpot_ms"] = draw(st.sampled_from([(2000, 100), (500, 30), (60_000, 1000)]))
            srv["ttft_p99_ms"] = 3 * srv["ttft_ms"]
            doc["configs"][0]["instance_type"] = draw(st.sampled_from(["g6e.xlarge", "inf2.48xlarge",
                                                                       "p5.48xlarge", "trn1.32xlarge"]))
        else:
            doc = draw(mutated(SERVING))
        case = _scenario_with(doc)
    elif kind == "sweep":
        base = copy.deepcopy(INFERENCE)
        axes = draw(st.lists(st.sampled_from(["region", "batch_size", "max_utilization", "price_usd_per_h",
                                              "instance_type", "precision", "backend", "seq_len", "bogus"]),
                             min_size=1, max_size=3, unique=True))
        valid = {"region": ["us-east-1", "eu-north-1", "us-west-2"], "batch_size": [1, 2, 8],
                 "max_utilization": [0.5, 0.8], "price_usd_per_h": [0.1, 1.0], "precision": ["fp16", "bf16"],
                 "instance_type": ["g4dn.xlarge", "inf2.xlarge"], "backend": ["analytic"], "seq_len": [128],
                 "bogus": [1]}
        axis_value = {a: st.one_of(st.sampled_from(valid[a]), value) for a in axes}
        base["sweep"] = {a: draw(st.lists(axis_value[a], min_size=0, max_size=4)) for a in axes}
        case = _scenario_with(base)
    elif kind == "parallelism":
        base = copy.deepcopy(TRAINING)
        base["configs"][0]["parallelism"] = draw(st.one_of(
            st.sampled_from(["auto", "none", None]),
            st.dictionaries(st.sampled_from(["tensor", "pipeline", "data", "zero_stage", "recompute",
                                             "microbatch", "schedule", "virtual_stages", "bogus"]),
                            value, max_size=4)))
        case = _scenario_with(base)
    elif kind in ("hf_config", "hf_workload"):
        text, family = draw(hf_config_texts())
        if kind == "hf_workload":
            case = Case("", {"config.json": text}, ["workload", "{d}/config.json"])
        else:
            base = copy.deepcopy(SERVING if family != "bert" else INFERENCE)
            base["workload"].pop("model", None)
            base["workload"]["architecture"] = {"from_hf_config": "config.json"}
            if family == "bert":
                base["configs"] = base["configs"][1:2]
                base["baseline"] = "b"
            case = _scenario_with(base, **{"config.json": text})
        if draw(st.integers(0, 5)) == 0:
            case = _special(case, "config.json", draw(st.sampled_from(SPECIALS)))
    elif kind == "profile_csv":
        base = copy.deepcopy(INFERENCE)
        base["workload"]["inference"]["profile"] = {"csv": "day.csv"}
        case = _scenario_with(base, **{"day.csv": draw(profile_csv_texts())})
        if draw(st.integers(0, 5)) == 0:
            case = _special(case, "day.csv", draw(st.sampled_from(SPECIALS)))
    elif kind == "sysfs":
        n = draw(st.integers(0, 3))
        files = {f"sys/neuron{i}/stats/power/utilization": draw(sysfs_texts()) for i in range(n)}
        case = Case("", files, ["neuron-power", "--sysfs", "{d}/sys", "--max-w", "100"], dirs=["sys"])
    else:
        text = draw(results_texts(doc))
        args = {"compare": ["compare", run_dir, "{d}/r"] + (["--markdown"] if draw(st.booleans()) else []),
                "report": ["report", "{d}/r"],
                "check": ["check", "{d}/r", "--baseline", run_dir]}[kind]
        case = Case("", {"r/results.json": text}, args, (0, 1, 2, 5) if kind == "check" else (0, 2))
    case.kind = kind
    return case


def materialize(case: Case, root: Any) -> list[str]:
    """Write ``case``'s files under the folder ``root``; the command's arguments, ``{d}`` filled."""
    from pathlib import Path

    root = Path(root)
    for d in case.dirs:
        (root / d).mkdir(parents=True, exist_ok=True)
    for name, text in case.files.items():
        f = root / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text, encoding="utf-8", errors="surrogatepass")
    for name, kind in case.specials.items():
        f = root / name
        f.parent.mkdir(parents=True, exist_ok=True)
        if kind == "fifo":
            os.mkfifo(f)
        elif kind == "loop":
            os.symlink(f.name + ".loop", f)
            os.symlink(f.name, f.with_name(f.name + ".loop"))
        elif kind == "dir":
            f.mkdir()
        elif kind == "devzero":
            os.symlink("/dev/zero", f)
        else:
            f.write_bytes(b"")
    return [a.replace("{d}", str(root)) for a in case.args]
