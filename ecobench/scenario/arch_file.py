"""An architecture from a YAML file, for ``ecobench workload --arch FILE``: a scenario (its
``workload``'s model and head), a mapping with an ``architecture`` block, or the block's fields alone."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from ecobench.errors import InputError
from ecobench.io.bounded import snippet
from ecobench.io.yamlio import load_yaml
from ecobench.scenario.load import load_scenario
from ecobench.scenario.messages import Schema, error_lines
from ecobench.scenario.model import MESSAGE_SCHEMA, ArchitectureSpec, describe_fields
from ecobench.words import parsed_kind
from ecobench.workloads.architecture import Architecture, Task

# The messages' view of the block: its fields are the ones allowed at its top level (not a scenario's).
ARCH_SCHEMA = Schema(lambda: describe_fields(ArchitectureSpec), MESSAGE_SCHEMA.names)
EXPECTED = "a scenario (with a workload), a mapping with an 'architecture' block, or the block's fields"


def architecture_from_file(path: str | Path) -> tuple[Architecture, tuple[Task, int] | None]:
    """The model a YAML file describes, and a scenario's head (task, labels: as ``run`` evaluates it;
    None for an architecture alone); errors name the file and the field."""
    p = Path(path)
    data = load_yaml(p, "architecture")
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a mapping ({EXPECTED}), got {parsed_kind(data)}")
    if "workload" in data:
        w = load_scenario(p).workload
        return w.arch(), w.head()
    block, where = (data["architecture"], "architecture") if "architecture" in data else (data, "")
    fields = list(ArchitectureSpec.model_fields)
    if not where and not set(map(str, data)) & set(fields):
        found = ", ".join(snippet(str(k)) for k in list(data)[:5]) + (", ..." if len(data) > 5 else "")
        what = f"none of its fields ({found}) is one" if data else "the mapping is empty"
        raise InputError(f"{p}: not an architecture: {what}; allowed: "
                         f"{EXPECTED} ({', '.join(fields)})")
    try:
        spec = ArchitectureSpec.model_validate(block)
    except ValidationError as exc:
        lines = error_lines(exc.errors(), ARCH_SCHEMA)  # type: ignore[arg-type]
        prefix = f"{where}: " if where else ""
        raise InputError(f"{p}: invalid architecture\n  " + "\n  ".join(prefix + m for m in lines)) from None
    if spec.from_hf_config is not None:
        from ecobench.workloads.hf_config import load_hf_config

        cfg = Path(spec.from_hf_config)
        return load_hf_config(cfg if cfg.is_absolute() else p.parent / cfg,
                              f"{p}: {where or 'from_hf_config'}"), None
    return spec.build(f"custom-{spec.kind}-{spec.layers}x{spec.hidden_size}"), None
