"""What ``ecobench workload SCENARIO`` adds for a serving scenario: the request lengths it serves
(means, spread and shape, or the lengths CSV's), beside the model's own numbers."""

from __future__ import annotations

from typing import Any

from ecobench.planning.serving import traffic_of
from ecobench.planning.traffic import Lengths
from ecobench.scenario.model import ServingSpec


def _lengths(x: Lengths) -> dict[str, Any]:
    out: dict[str, Any] = {"mean_tokens": x.mean, "cv": x.cv, "distribution": x.family}
    if x.samples is not None:
        out |= {"requests": len(x.samples), "min_tokens": min(x.samples), "max_tokens": max(x.samples)}
    return out


def serving_lengths(spec: ServingSpec) -> dict[str, Any]:
    """The serving workload's rate and input and output length distributions, as ``run`` reads them."""
    t = traffic_of(spec)
    return {"requests_per_h": spec.requests_per_h, "lengths_csv": spec.lengths_csv,
            "input": _lengths(t.input), "output": _lengths(t.output),
            "arrival_cv": spec.arrival_cv if spec.arrival_cv is not None else 1.0}


def format_serving(d: dict[str, Any], seq_len: int) -> str:
    """The lengths as text, and what the FLOPs above were counted at (``seq_len``)."""
    def line(what: str, x: dict[str, Any]) -> str:
        spread = ("every request this long" if x["cv"] == 0 else
                  f"cv {x['cv']:.2f}, {x['distribution']}")
        seen = (f"; {x['min_tokens']:,.0f} to {x['max_tokens']:,.0f} over {x['requests']:,} requests"
                if "requests" in x else "")
        return f"  {what:<26} {x['mean_tokens']:>12,.0f} tokens, mean   ({spread}{seen})"

    arrivals = "Poisson" if d["arrival_cv"] == 1 else f"cv {d['arrival_cv']:g}"
    source = f" from {d['lengths_csv']}" if d["lengths_csv"] else ""
    context = round(d["input"]["mean_tokens"] + d["output"]["mean_tokens"])
    return "\n".join([
        f"serving (workload.serving{source}):",
        f"  {'requests_per_h':<26} {d['requests_per_h']:>12,.0f}   (arrivals {arrivals})",
        line("input_tokens", d["input"]),
        line("output_tokens", d["output"]),
        f"  (the FLOPs per token above are at {seq_len:,} tokens; `--seq-len {context}` counts them at the "
        "mean prompt plus output)"])
