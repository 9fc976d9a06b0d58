"""An architecture from a YAML file, for ``ecobench workload --arch FILE``: a scenario (its
``workload``'s model and head), a mapping with an ``architecture`` block, or the block's fields alone."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from ecobench.errors import InputError
from ecobench.io.yamlio import load_yaml
from ecobench.scenario.load import load_scenario
from ecobench.scenario.messages import error_lines
from ecobench.scenario.model import MESSAGE_SCHEMA, ArchitectureSpec
from ecobench.workloads.architecture import Architecture, Task


def architecture_from_file(path: str | Path) -> tuple[Architecture, tuple[Task, int] | None]:
    """The model a YAML file describes, and a scenario's head (task, labels: as ``run`` evaluates it;
    None for an architecture alone); errors name the file and the field."""
    p = Path(path)
    data = load_yaml(p, "architecture")
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a mapping (a scenario, an 'architecture' block, or its fields), "
                         f"got {type(data).__name__}")
    if "workload" in data:
        w = load_scenario(p).workload
        return w.arch(), w.head()
    block, where = (data["architecture"], "architecture") if "architecture" in data else (data, "")
    try:
        spec = ArchitectureSpec.model_validate(block)
    except ValidationError as exc:
        lines = error_lines(exc.errors(), MESSAGE_SCHEMA)  # type: ignore[arg-type]
        prefix = f"{where}: " if where else ""
        raise InputError(f"{p}: invalid architecture\n  " + "\n  ".join(prefix + m for m in lines)) from None
    if spec.from_hf_config is not None:
        from ecobench.workloads.hf_config import load_hf_config

        cfg = Path(spec.from_hf_config)
        return load_hf_config(cfg if cfg.is_absolute() else p.parent / cfg,
                              f"{p}: {where or 'from_hf_config'}"), None
    return spec.build(f"custom-{spec.kind}-{spec.layers}x{spec.hidden_size}"), None
