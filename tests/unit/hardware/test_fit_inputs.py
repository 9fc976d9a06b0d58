"""The digest that lets `validate --mode holdout` read stored held-out predictions instead of
refitting (residuals.FIT_INPUTS) must cover every module the fits run: a change to a module it
leaves out would leave the stored predictions in use, reported as 'inputs unchanged', though stale."""

import ast
from pathlib import Path

import ecobench
from ecobench.hardware.backends.residuals import FIT_INPUTS

ROOT = Path(ecobench.__file__).parent
# Modules the fits import that cannot move a fitted value: errors, messages, file plumbing.
PLUMBING = {"errors.py", "process.py", "version.py", "words.py"}
FITS = ("hardware/backends/efficiency.py", "hardware/neuron/fit.py", "hardware/published.py")


def _imported(path: Path) -> set[str]:
    """ecobench modules ``path`` imports (at any depth of its code), relative to the package."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ecobench":
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.split(".")[0] == "ecobench"}
    out = set()
    for name in names:
        rel = Path(*name.split(".")[1:])
        if (ROOT / rel).with_suffix(".py").is_file():
            out.add(str(rel.with_suffix(".py")))
        elif (ROOT / rel / "__init__.py").is_file():
            out.add(str(rel / "__init__.py"))
    return out


def test_fit_inputs_cover_every_module_the_fits_import():
    seen: set[str] = set()
    todo = list(FITS)
    while todo:
        rel = todo.pop()
        if rel not in seen:
            seen.add(rel)
            todo += _imported(ROOT / rel)
    missing = sorted(m for m in seen - set(FIT_INPUTS)
                     if m not in PLUMBING and not m.startswith("io/") and not m.endswith("__init__.py"))
    assert not missing, f"residuals.FIT_INPUTS leaves out {missing}, which the held-out fits import"
