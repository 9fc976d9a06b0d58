"""Record the golden outputs of every shipped scenario (and the shipped bad-input cases).

    python tools/golden.py            # write tests/golden/ from the current code
    python tools/golden.py --check    # compare the current code with tests/golden/ (exit 1 on a difference)

tests/integration/test_golden.py runs the same comparison. Regenerate only when a change is meant to
change results, and say so in the commit.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
GOLDEN = ROOT / "tests" / "golden"
# A run's own circumstances, not its results.
VOLATILE_KEYS = ("run_id", "created_utc", "machine", "git")
# Measured on the host: not reproducible, so not golden.
SKIP = {"local_measure"}
REL_TOL = 1e-9

# Bad-input cases: (name, scenario text) run through the CLI; exit code and message are golden.
BAD_INPUT = {
    "unknown_instance": "schema_version: 1\nname: t\nworkload: {model: bert-base, inference: {rate_per_h: 1000, seq_len: 128}}\n"
                        "configs: [{id: a, instance_type: inf9.xlarge, precision: bf16}]\nbaseline: a\n",
    "unknown_field": "schema_version: 1\nname: t\nworkload: {model: bert-base, inference: {rate_per_h: 1000, seq_len: 128}}\n"
                     "configs: [{id: a, instance_type: inf1.xlarge, precision: bf16, colour: red}]\nbaseline: a\n",
    "negative_rate": "schema_version: 1\nname: t\nworkload: {model: bert-base, inference: {rate_per_h: -5, seq_len: 128}}\n"
                     "configs: [{id: a, instance_type: inf1.xlarge, precision: bf16}]\nbaseline: a\n",
    "missing_baseline": "schema_version: 1\nname: t\nworkload: {model: bert-base, inference: {rate_per_h: 1000, seq_len: 128}}\n"
                        "configs: [{id: a, instance_type: inf1.xlarge, precision: bf16}]\nbaseline: zz\n",
    "bad_precision": "schema_version: 1\nname: t\nworkload: {model: bert-base, inference: {rate_per_h: 1000, seq_len: 128}}\n"
                     "configs: [{id: a, instance_type: g4dn.xlarge, precision: bf16}]\nbaseline: a\n",
    "layout_does_not_fit": "schema_version: 2\nname: t\nworkload: {model: llama2-70b, training: {total_tokens: 1.0e9, "
                           "phases: [{seq_len: 4096, fraction: 1.0}], global_batch_size: 1024}}\nconfigs: [{id: a, instance_type: p4d.24xlarge, "
                           "instances: 1, precision: bf16, parallelism: {tensor: 1, pipeline: 1, data: 8}}]\nbaseline: a\n",
    "not_yaml": "schema_version: [1\n",
}


def scenario_names() -> list[str]:
    return sorted(p.stem for p in SCENARIOS.glob("*.yaml") if p.stem not in SKIP)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ecobench", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


def run_scenario(name: str, out: Path) -> Path:
    """Run one shipped scenario into ``out``/name and return the run directory."""
    run_dir = out / name
    p = _cli("run", str(SCENARIOS / f"{name}.yaml"), "-q", "--out", str(run_dir))
    if p.returncode != 0:
        raise RuntimeError(f"{name}: exit {p.returncode}: {p.stderr.strip()}")
    return run_dir


def _rooted(v: object) -> object:
    """``v`` with this checkout's path written ``<root>``: a scenario's file paths are absolute, and
    another checkout (a worktree) of the same code gives the same results."""
    if isinstance(v, dict):
        return {k: _rooted(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_rooted(x) for x in v]
    if isinstance(v, str) and v.startswith(str(ROOT) + "/"):
        return "<root>" + v[len(str(ROOT)):]
    return v


def stable_json(run_dir: Path) -> dict:
    d = json.loads((run_dir / "results.json").read_text())
    for k in VOLATILE_KEYS:
        d.pop(k, None)
    return _rooted(d)  # type: ignore[return-value]


def bad_input_outcomes(tmp: Path) -> dict[str, dict]:
    out = {}
    for name, text in BAD_INPUT.items():
        f = tmp / f"{name}.yaml"
        f.write_text(text)
        p = _cli("run", str(f), "-q", "--out", str(tmp / f"run-{name}"))
        out[name] = {"exit": p.returncode, "stderr": p.stderr.replace(str(tmp), "<tmp>").strip()}
    return out


def _close(a: object, b: object, path: str, diffs: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                diffs.append(f"{path}.{k}: only in {'golden' if k in a else 'current'}")
            else:
                _close(a[k], b[k], f"{path}.{k}", diffs)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            diffs.append(f"{path}: {len(a)} items in golden, {len(b)} now")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _close(x, y, f"{path}[{i}]", diffs)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if not (a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)):
            diffs.append(f"{path}: golden {a!r}, now {b!r}")
    elif a != b:
        diffs.append(f"{path}: golden {str(a)[:80]!r}, now {str(b)[:80]!r}")


def _cell(s: str) -> object:
    try:
        return float(s)
    except ValueError:
        return s


def csv_rows(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return [{k: _cell(v) for k, v in row.items()} for row in csv.DictReader(f)]


def compare(name: str, run_dir: Path) -> list[str]:
    """Differences between a fresh run of ``name`` and its golden outputs."""
    diffs: list[str] = []
    gold = GOLDEN / name
    _close(json.loads((gold / "results.json").read_text()), stable_json(run_dir), f"{name}/results.json", diffs)
    _close(csv_rows(gold / "results.csv"), csv_rows(run_dir / "results.csv"), f"{name}/results.csv", diffs)
    return diffs


def write(tmp: Path) -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name in scenario_names():
        run_dir = run_scenario(name, tmp)
        dest = GOLDEN / name
        dest.mkdir(exist_ok=True)
        (dest / "results.json").write_text(json.dumps(stable_json(run_dir), indent=1, sort_keys=True) + "\n")
        (dest / "results.csv").write_bytes((run_dir / "results.csv").read_bytes())
        print(f"wrote {dest.relative_to(ROOT)}")
    (GOLDEN / "bad_input.json").write_text(json.dumps(bad_input_outcomes(tmp), indent=1, sort_keys=True) + "\n")


def check(tmp: Path) -> int:
    diffs: list[str] = []
    for name in scenario_names():
        diffs += compare(name, run_scenario(name, tmp))
    _close(json.loads((GOLDEN / "bad_input.json").read_text()), bad_input_outcomes(tmp), "bad_input", diffs)
    print("\n".join(diffs[:200]) or "golden outputs unchanged")
    return 1 if diffs else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as t:
        return check(Path(t)) if a.check else (write(Path(t)) or 0)


if __name__ == "__main__":
    sys.exit(main())
