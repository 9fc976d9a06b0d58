"""Fuzz every input ecobench reads with many generated cases and count how each ended.

Same generators as tests/integration/test_fuzz.py (tests/fuzz_cases.py), more cases, random seeds. A case is
"ran" (exit 0), "clean rejection" (exit 2, or 1/5 for a check), or a crash (any other exit code, a
traceback or an internal error on stderr, a file written outside the results folder, or a run whose
figures are not finite numbers >= 0). The whole surface (``--surface``: scenarios of every mode,
sweeps, parallelism, HF configs, profile CSVs, Neuron sysfs trees, results files for compare, report
and check) also counts exit code 3, hangs (a case over 20 s is stopped by an alarm) and memory
blow-ups (the process's peak resident memory over 3 GB after a case).

    python benchmarks/fuzz_inputs.py                 # 3,000 across the surface, 0 scenarios/baselines
    python benchmarks/fuzz_inputs.py --surface 3000 --scenarios 500 --baselines 200
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ecobench.cli import main as cli  # noqa: E402
from tests.fuzz_cases import results_texts, scenario_texts  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the benchmarks' shared helpers
from timing import whole  # noqa: E402


def _run(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli(list(args))
    return code, err.getvalue()


def _finite(results: Path) -> bool:
    rows = json.loads(results.read_text())["rows"]
    keys = ("throughput_per_instance_per_s", "instances", "energy_kwh", "cost_usd", "co2_kg", "power_w",
            "duration_h")
    return all(isinstance(r[k], int | float) and math.isfinite(r[k]) and r[k] >= 0
               for r in rows for k in keys)


def fuzz_scenarios(n: int, crashes: list[str]) -> Counter[str]:
    counts: Counter[str] = Counter()

    @settings(max_examples=n, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(text=scenario_texts())
    def case(text: str) -> None:
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            f = root / "s.yaml"
            f.write_text(text, encoding="utf-8", errors="surrogatepass")
            code, err = _run("run", str(f), "-q", "--results", str(root / "results"))
            outside = [p.name for p in root.iterdir() if p.name not in ("s.yaml", "results")]
            ok = code in (0, 2) and "Traceback" not in err and "internal error" not in err and not outside
            if code == 0 and ok:
                ok = _finite(next((root / "results").glob("*/*/results.json")))
                err = err or "a figure is not a finite number >= 0"
            counts["cases"] += 1
            counts["ran" if code == 0 else "clean rejection" if ok else "crash"] += 1
            if not ok:
                crashes.append(f"scenario exit {code}: {err.strip()[:300]}\n---\n{text[:500]}")

    case()
    return counts


def fuzz_baselines(n: int, crashes: list[str]) -> Counter[str]:
    from tests.integration.test_gate_inputs import _rates, _write_run

    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as d:
        run, doc = _write_run(Path(d), "r", _rates(5.0))

        @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(data=st.data())
        def case(data: st.DataObject) -> None:
            text = data.draw(results_texts(doc))
            as_run = data.draw(st.booleans())
            with tempfile.TemporaryDirectory() as e:
                f = Path(e) / "results.json"
                f.write_text(text, encoding="utf-8")
                args = (["check", e, "--baseline", str(run)] if as_run
                        else ["check", str(run), "--baseline", str(f)])
                code, err = _run(*args, "--fail-on", "energy_kwh:+5%", "--fail-on", "cost_usd:+5%")
                ok = code in (0, 1, 2, 5) and "Traceback" not in err and "internal error" not in err
                counts["cases"] += 1
                outcome = "passed or regression" if code in (0, 1) else "clean rejection" if ok else "crash"
                counts[outcome] += 1
                if not ok:
                    crashes.append(f"baseline exit {code}: {err.strip()[:300]}\n---\n{text[:500]}")

        case()
    return counts


HANG_S = 20
MEMORY_LIMIT_BYTES = 3 << 30


class _Hang(BaseException):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Hang


def _peak_rss_bytes() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def fuzz_surface(n: int, crashes: list[str]) -> dict[str, object]:
    """``n`` cases across the whole surface: outcomes per kind, exit-3 count, hangs, memory."""
    import signal

    from tests.fuzz_cases import materialize, surface_cases
    from tests.integration.test_gate_inputs import _rates, _write_run

    counts: Counter[str] = Counter()
    worst = {"seconds": 0.0, "kind": ""}
    signal.signal(signal.SIGALRM, _alarm)
    with tempfile.TemporaryDirectory() as d:
        run, doc = _write_run(Path(d), "r", _rates(5.0))

        @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(data=st.data())
        def case(data: st.DataObject) -> None:
            c = data.draw(surface_cases(str(run), doc))
            with tempfile.TemporaryDirectory() as e:
                args = materialize(c, e)
                t0 = time.monotonic()
                signal.alarm(HANG_S)
                try:
                    code, err = _run(*args)
                except _Hang:
                    code, err = -1, f"hang: over {HANG_S} s"
                finally:
                    signal.alarm(0)
                took = time.monotonic() - t0
            if took > worst["seconds"]:
                worst.update(seconds=round(took, 2), kind=c.kind)
            counts["cases"] += 1
            counts[f"{c.kind}: exit {code}"] += 1
            if code == 3:
                counts["exit 3"] += 1
            if code == -1:
                counts["hangs over 20 s"] += 1
            if _peak_rss_bytes() > MEMORY_LIMIT_BYTES and not counts["memory over 3 GB"]:
                counts["memory over 3 GB"] += 1
            ok = code in c.allowed and "Traceback" not in err and "internal error" not in err
            if not ok:
                counts["crashes"] += 1
                crashes.append(f"{c.kind} exit {code}: {err.strip()[:300]}\n--- {c.args}\n"
                               + "\n".join(f"{k}: {v[:300]!r}" for k, v in c.files.items()))

        case()
    return {**dict(sorted(counts.items())), "peak_rss_mib": round(_peak_rss_bytes() / 2**20),
            "slowest_case": worst}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--surface", type=whole(0, 1_000_000), default=3000,
                    help="cases across every input, 0-1,000,000 (default 3,000; 0: none)")
    ap.add_argument("--scenarios", type=whole(0, 1_000_000), default=0,
                    help="scenario cases (default 0: none)")
    ap.add_argument("--baselines", type=whole(0, 1_000_000), default=0,
                    help="baseline cases (default 0: none)")
    args = ap.parse_args()
    crashes: list[str] = []
    t0 = time.monotonic()
    w = fuzz_surface(args.surface, crashes) if args.surface else {}
    s = fuzz_scenarios(args.scenarios, crashes) if args.scenarios else Counter()
    b = fuzz_baselines(args.baselines, crashes) if args.baselines else Counter()
    summary = {"surface": w, "scenarios": dict(s), "baselines": dict(b), "crashes": len(crashes),
               "seconds": round(time.monotonic() - t0, 1)}
    out = ROOT / "benchmarks" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "fuzz_inputs.json").write_text(json.dumps(summary | {"crash_cases": crashes}, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    for c in crashes[:10]:
        print("\n" + c)


if __name__ == "__main__":
    main()
