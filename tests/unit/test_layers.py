"""The package's imports run one way, down the stages of docs/architecture.md: no module imports a
stage above its own, and no two modules import each other (lazy imports inside functions count)."""

import ast
from pathlib import Path

import ecobench

ROOT = Path(ecobench.__file__).parent
# Top to bottom, as docs/architecture.md lists them; a stage may import its own and those below.
STAGES = (("cli", "api", "runner", "__main__", "__init__"), ("gate", "validation"), ("reports",),
          ("planning",), ("power",), ("scenario",), ("hardware",), ("parallel",),
          ("workloads", "io", "measure"),
          ("errors", "units", "bounds", "table", "process", "version", "words"))
LEVEL = {name: i for i, stage in enumerate(STAGES) for name in stage}


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Every ecobench module the file imports (``from package import submodule`` names the
    submodule)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ecobench":
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.add(sub if sub in modules else node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "ecobench"}
    return out


def _graph() -> dict[str, set[str]]:
    files = {_module(p): p for p in ROOT.rglob("*.py")}
    return {m: {i for i in _imports(p, set(files)) if i in files and i != m} for m, p in files.items()}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_stage_is_listed():
    assert {_stage(m) for m in _graph()} <= set(LEVEL), "a new top-level module needs its stage here"


def test_no_module_imports_a_stage_above_its_own():
    up = sorted(f"{m} -> {i}" for m, deps in _graph().items() for i in deps
                if LEVEL[_stage(i)] < LEVEL[_stage(m)])
    assert not up, up


def test_no_two_modules_import_each_other():
    g = _graph()
    pairs = sorted({tuple(sorted((a, b))) for a, deps in g.items() for b in deps if a in g.get(b, ())})
    assert not pairs, pairs
