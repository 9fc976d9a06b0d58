"""Loading a scenario: the only place user input is read and validated. The file's relative paths
are resolved and the files they name read once, so that a bad one is bad input before anything runs.

Errors name the file, the field path and what is wrong, and surface as :class:`InputError`.
"""


from pathlib import Path

from pydantic import ValidationError

from ecobench.errors import InputError
from ecobench.io.yamlio import load_yaml
from ecobench.scenario.checks import check_names, unknown_chips
from ecobench.scenario.messages import error_lines
from ecobench.scenario.model import MESSAGE_SCHEMA, Scenario
from ecobench.scenario.profile import resolve_profile
from ecobench.version import BASELINE_KIND, RESULTS_KIND
from ecobench.words import parsed_kind

__all__ = ["load_scenario", "scenario_from_dict"]


def scenario_from_dict(data: object, source: str = "<scenario>", base_dir: Path | None = None) -> Scenario:
    """Validate a parsed scenario; errors name ``source`` and each field path. Relative paths in it
    are read from ``base_dir``."""
    if not isinstance(data, dict):
        raise InputError(f"{source}: a scenario is a mapping of fields (schema_version, name, workload, "
                         f"configs, baseline, ...; see `ecobench run --help`), got {parsed_kind(data)}")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        lines = error_lines(exc.errors(), MESSAGE_SCHEMA)  # type: ignore[arg-type]
        lines += [line for line in unknown_chips(data.get("overrides")) if line not in lines]
        raise InputError(f"{source}: invalid scenario\n  " + "\n  ".join(lines)) from None
    scenario = _resolve_paths(scenario, base_dir, source)
    scenario = _resolve_measured_serving(scenario, base_dir, source)
    scenario = _resolve_power_points(scenario, base_dir, source)
    check_names(scenario, source)
    return scenario


def _resolve_power_points(s: Scenario, base_dir: Path | None, source: str) -> Scenario:
    """``power_points`` made absolute (relative to the scenario file's folder); the file is read and
    checked where the run's power model is refitted with it (``planning.evaluate``), before anything
    runs."""
    if s.power_points is None:
        return s
    p = Path(s.power_points)
    if not p.is_absolute() and base_dir is not None:
        p = (base_dir / p).resolve()
    return s.model_copy(update={"power_points": str(p)})


def _resolve_measured_serving(s: Scenario, base_dir: Path | None, source: str) -> Scenario:
    """Each ``configs[].measured_serving`` made absolute (relative to the scenario file's folder) and
    read once here, so a bad file is bad input before anything runs."""
    from ecobench.io import vllm_bench

    if not any(c.measured_serving for c in s.configs):
        return s
    configs = []
    for i, c in enumerate(s.configs):
        if c.measured_serving is not None:
            p = Path(c.measured_serving)
            if not p.is_absolute() and base_dir is not None:
                p = (base_dir / p).resolve()
            try:
                vllm_bench.read(p)
            except InputError as exc:
                raise InputError(f"{source}: configs[{i}].measured_serving: {exc}") from None
            c = c.model_copy(update={"measured_serving": str(p)})
        configs.append(c)
    return s.model_copy(update={"configs": configs})


def _resolve_paths(s: Scenario, base_dir: Path | None, source: str = "<scenario>") -> Scenario:
    """Make a relative ``from_hf_config`` absolute (relative to the scenario file's folder); read a
    load profile's CSV."""
    s = _resolve_profile(s, base_dir, source)
    s = _resolve_lengths(s, base_dir, source)
    a = s.workload.architecture
    if a is not None and a.from_hf_config is not None:
        from ecobench.io.bounded import check_path

        try:
            check_path(a.from_hf_config, "workload.architecture.from_hf_config")
        except InputError as exc:
            raise InputError(f"{source}: {exc}") from None
    if a is None or a.from_hf_config is None or base_dir is None or Path(a.from_hf_config).is_absolute():
        return s
    from ecobench.io.bounded import resolve_path

    try:
        path = str(resolve_path(base_dir / a.from_hf_config, "workload.architecture.from_hf_config"))
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None
    arch = a.model_copy(update={"from_hf_config": path})
    return s.model_copy(update={"workload": s.workload.model_copy(update={"architecture": arch})})


def _resolve_lengths(s: Scenario, base_dir: Path | None, source: str) -> Scenario:
    """Read a serving workload's lengths CSV (relative to the scenario's folder): bad rows are bad input
    now, and its means become ``input_tokens`` and ``output_tokens``."""
    sv = s.workload.serving
    if sv is None or sv.lengths_csv is None:
        return s
    from ecobench.io.lengths_csv import read_lengths_csv

    path = Path(sv.lengths_csv)
    if not path.is_absolute() and base_dir is not None:
        path = (base_dir / path).resolve()
    try:
        li, lo = read_lengths_csv(path, "workload.serving.lengths_csv")
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None
    means = {"input_tokens": max(1, round(float(li.mean()))),
             "output_tokens": max(1, round(float(lo.mean())))}
    for name, mean in means.items():  # a run's scenario.yaml holds the file's means: equal, so read again
        given = getattr(sv, name)
        if given is not None and given != mean:
            raise InputError(f"{source}: workload.serving.{name}: {given} differs from the mean of "
                             f"lengths_csv {sv.lengths_csv} ({mean}); the file gives the lengths: drop "
                             "input_tokens and output_tokens, or lengths_csv")
    spec = sv.model_copy(update={"lengths_csv": str(path), **means})
    return s.model_copy(update={"workload": s.workload.model_copy(update={"serving": spec})})


def _resolve_profile(s: Scenario, base_dir: Path | None, source: str) -> Scenario:
    """The workload with its load profile's CSV read and its hourly rates bounded."""
    w = s.workload
    spec = w.inference or w.serving
    if spec is None or spec.profile is None:
        return s
    rate = w.inference.rate_per_h if w.inference else w.serving.requests_per_h  # type: ignore[union-attr]
    try:
        profile = resolve_profile(spec.profile, rate, base_dir, f"workload.{w.mode}.profile")
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None
    return s.model_copy(update={"workload": w.model_copy(update={
        w.mode: spec.model_copy(update={"profile": profile})})})


def _with_example_hint(exc: InputError, path: str | Path) -> InputError:
    """A missing scenario file named as a packaged example (``scenarios/layoutlm_realtime.yaml``
    run outside a checkout, or from another folder) says how to get it: the README's first command
    fails that way after a pip install."""
    if not str(exc).endswith(": no such scenario file"):
        return exc
    from ecobench.scenario import examples

    name = Path(path).name.removesuffix(".yaml")
    if name not in examples.names():
        return exc
    return InputError(f"{exc}; {name} is a packaged example: `ecobench examples {name} --to .` writes "
                      f"it into the current folder, then `ecobench run {name}.yaml`")


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file (regular file, size cap, strict YAML: ecobench.io.yamlio);
    a local config.json it names is read relative to it. A file ecobench writes or reads elsewhere (a
    run's results.json, a baseline, calibration points) is named as what it is: its validation as a
    scenario would list every scenario field as missing."""
    try:
        doc = load_yaml(path, "scenario")
    except InputError as exc:
        raise _with_example_hint(exc, path) from None
    if isinstance(doc, dict):  # by its kind first: a baseline holds its scenario's workload too
        kind = doc.get("kind")
        if kind == RESULTS_KIND:
            raise InputError(f"{path}: a run's results.json, not a scenario; its scenario is scenario.yaml "
                             "beside it; read the run back with ecobench.load_run or `ecobench report`")
        if kind == BASELINE_KIND:
            raise InputError(f"{path}: a baseline file, not a scenario; give it to `ecobench check RUN_DIR "
                             "--baseline`")
        if "workload" not in doc and {"sources", "points"} <= set(doc):
            raise InputError(f"{path}: a measured-power points file, not a scenario; give it to "
                             "`ecobench calibrate`")
    return scenario_from_dict(doc, str(path), Path(path).parent)
