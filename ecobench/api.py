"""The Python API: evaluate a scenario in a notebook or a script, without the command line.

    >>> import ecobench
    >>> result = ecobench.run("scenarios/layoutlm_realtime.yaml")    # or a dict of the same fields
    >>> result.to_pandas()[["config_id", "instances", "energy_kwh", "cost_usd", "co2_kg"]]
    >>> result.recommendations                                       # what `ecobench run` prints
    >>> result.write("results/layoutlm/today")                       # the run directory of `run --out`
    >>> ecobench.load_run("results/layoutlm/today").rows             # read back from results.json
    >>> ecobench.serve_point("llama3-8b", "p5.48xlarge", batch=8)      # `ecobench serve-point`, a dict

Errors are raised, never printed and never ``SystemExit``: a scenario that fails validation raises
:class:`ecobench.errors.InputError` with the message the CLI prints (each field's path and what is
allowed); every error ecobench raises on purpose derives from :class:`ecobench.errors.EcobenchError`.
What the CLI prints as a warning, :func:`run` issues with ``warnings.warn`` as an
:class:`ecobench.errors.EcobenchWarning`.
Signal handlers and the garbage collector of the calling process are left as they are (only the
``ecobench`` command installs its SIGTERM handler).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ecobench.errors import BackendError, EcobenchWarning, InputError
from ecobench.words import counted

if TYPE_CHECKING:  # imported when called: `import ecobench` stays cheap
    import pandas as pd

    from ecobench.scenario.model import Scenario
    from ecobench.table import Columns

__all__ = ["Result", "load_run", "run", "serve_point"]

ScenarioLike = str | os.PathLike[str] | Mapping[str, Any]


class Result:
    """One evaluated scenario: its rows, recommendations and results document (results.json).

    Made by :func:`run` (evaluated now) or :func:`load_run` (read from a run directory).
    """

    def __init__(self, document: dict[str, Any], table: Columns | None = None,
                 csv_path: Path | None = None, directory: Path | None = None) -> None:
        self.document = document
        self._table = table  # every row of results.csv (a sweep's every combination), when evaluated
        self._csv_path = csv_path  # results.csv (or results.parquet) of a loaded run, copied by write
        self.directory = directory  # where this run was written or read from, if anywhere

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every configuration (of a sweep: the rows shown in the report) as JSON-ready dicts."""
        rows: list[dict[str, Any]] = self.document["rows"]
        return rows

    @property
    def recommendations(self) -> list[dict[str, Any]]:
        """The recommended configurations, each with the objective it answers and why."""
        recs: list[dict[str, Any]] = self.document.get("recommendations", [])
        return recs

    @property
    def scenario(self) -> dict[str, Any]:
        """The resolved scenario (every default filled in), as written to scenario.yaml."""
        scenario: dict[str, Any] = self.document["scenario"]
        return scenario

    @property
    def mode(self) -> str:
        """``inference``, ``serving`` or ``training``."""
        return str(self.document["mode"])

    def to_pandas(self) -> pd.DataFrame:
        """The results table: one row per configuration in :attr:`rows`, core columns first (the
        columns of results.csv, plus the nested ones results.json carries). Of a sweep, every
        combination is in results.csv: ``pandas.read_csv(directory / "results.csv")``."""
        import pandas as pd

        from ecobench.reports.columns import JSON_TYPES
        from ecobench.reports.tables import ordered

        df = ordered(pd.DataFrame(self.rows))
        # integer columns as results.csv has them (a count of 2, not 2.0, as older results.json files
        # hold some); one with an empty cell stays float, as pandas.read_csv reads it
        for c in df.columns:
            col = df[c]
            if JSON_TYPES.get(str(c)) == "integer" and col.dtype.kind == "f" and col.notna().all() \
                    and (col == col.round()).all():
                df[c] = col.astype("int64")
        return df

    def write(self, directory: str | os.PathLike[str]) -> Path:
        """Write the run directory ``ecobench run --out DIRECTORY`` writes (scenario.yaml,
        results.csv, results.json, report.html); ``directory`` must not exist. It appears only when
        complete: nothing is left behind on any error or interrupt. Returns its path."""
        from ecobench.runner import write_run

        final = _new_dir(directory)
        doc = self.document | {"run_id": final.name}
        table = self._table
        if table is None and self._csv_path is None:
            from ecobench.table import from_rows

            table = from_rows(self.rows)
        write_run(doc, final, table=table, csv_from=self._csv_path)
        self.document, self.directory = doc, final
        return final

    def __repr__(self) -> str:
        where = f", directory={str(self.directory)!r}" if self.directory else ""
        return (f"<ecobench.Result {self.scenario.get('name')!r} ({self.mode}): "
                f"{counted(len(self.rows), 'row')}, {counted(len(self.recommendations), 'recommendation')}"
                f"{where}>")


def _path(value: object, what: str) -> Path:
    """``value`` as a path, or an :class:`InputError` naming the argument (not pathlib's TypeError,
    which names neither the argument nor the call)."""
    if isinstance(value, (str, os.PathLike)):
        return Path(value)
    raise InputError(f"{what} must be a path (a str or os.PathLike), got {type(value).__name__}")


def _new_dir(directory: str | os.PathLike[str], what: str = "Result.write: directory") -> Path:
    """A run directory to write: it must not exist yet (runs never overwrite an earlier run)."""
    path = _path(directory, what)
    if path.exists() or path.is_symlink():
        raise InputError(f"{path}: already exists; runs never overwrite an earlier run")
    return path


def _scenario(scenario: ScenarioLike | Scenario) -> tuple[Scenario, str]:
    """The validated scenario and the name its errors are prefixed with."""
    from ecobench.scenario.load import load_scenario, scenario_from_dict
    from ecobench.scenario.model import Scenario

    if isinstance(scenario, Scenario):
        return scenario, "scenario"
    if isinstance(scenario, Mapping):
        try:
            return scenario_from_dict(dict(scenario), "scenario"), "scenario"
        except InputError as exc:  # a path copied from a YAML file is relative to that file's folder
            if ": no such file" not in str(exc):
                raise
            where = os.getcwd()
            raise InputError(f"{exc}; a dict's relative paths are read from the working directory "
                             f"({where}), not from the folder of a YAML file it was read from") from None
    if isinstance(scenario, (str, os.PathLike)):
        return load_scenario(scenario), str(scenario)
    raise InputError(f"ecobench.run: scenario must be a path to a YAML file or a dict of scenario fields, "
                     f"got {type(scenario).__name__}")


def run(scenario: ScenarioLike | Scenario, *, out: str | os.PathLike[str] | None = None,
        progress: Callable[[str], None] | None = None) -> Result:
    """Evaluate a scenario: a path to a scenario YAML file, or a dict of its fields (as the YAML
    file would hold them; relative file paths in a dict are read from the working directory).

    ``out``: also write the run directory there (must not exist; checked before evaluating), as
    :meth:`Result.write`. ``progress``: called with one line per step (the CLI prints them to
    stderr); silent by default. Raises :class:`~ecobench.errors.InputError` for a scenario that
    fails validation or cannot be evaluated, with the CLI's message.
    """
    from ecobench.io.rundir import new_run_id
    from ecobench.planning.evaluate import evaluate_all
    from ecobench.runner import results_document

    if progress is not None and not callable(progress):
        raise InputError(f"ecobench.run: progress must be a callable taking one str (print, for one), "
                         f"got {type(progress).__name__}")
    s, source = _scenario(scenario)
    final = _new_dir(out, "ecobench.run: out") if out is not None else None
    try:
        ev = evaluate_all(s, progress=progress)
    except (InputError, BackendError) as exc:  # name the scenario, as the CLI names the file
        raise InputError(f"{source}: {exc}") from None
    result = Result(results_document(s, ev.rows, final.name if final else new_run_id(), ev), ev.table)
    if final is not None:
        result.write(final)
    _warn(s, ev.rows)
    return result


def _warn(s: Scenario, rows: list[dict[str, Any]]) -> None:
    """What ``ecobench run`` prints as ``ecobench: warning:``, as :class:`EcobenchWarning` warnings
    from the caller's line (a latency target no batch meets, an empty cost, a deprecated name...)."""
    import warnings

    from ecobench.planning.evaluate import run_warnings

    for line in run_warnings(s, rows):
        warnings.warn(line, EcobenchWarning, stacklevel=3)


# serve_point's integer arguments -> their type in ecobench.bounds (the CLI's ranges)
_SERVE_POINT_INTEGERS = {"batch": "BatchSize", "input_tokens": "Tokens", "output_tokens": "Tokens",
                         "tensor": "Degree"}


def serve_point(model: str, instance_type: str, *, precision: str = "bf16", batch: int = 1,
                input_tokens: int = 128, output_tokens: int = 128, tensor: int | None = None,
                stack: str | None = None, weight_precision: str | None = None,
                kv_cache_precision: str | None = None, quantization: str | None = None,
                backend: str = "analytic", lnc: int | None = None) -> dict[str, Any]:
    """``ecobench serve-point``: TTFT, TPOT and output tokens per second of one static batch of a
    decoder preset, each with its 90% band (``ttft_ms``, ``ttft_ms_low``, ``ttft_ms_high``, ...), as
    the dict ``--format json`` prints. Arguments as the command's options (``tensor``: default the
    smallest degree that fits; ``backend``: ``analytic`` or ``emulated``, the emulated NeuronCore on
    inf2, trn1 and trn2; ``lnc``: 1 or 2, Trainium2's logical NeuronCore setting, default the chip's).
    Raises :class:`~ecobench.errors.InputError` with the command's message."""
    from ecobench import bounds
    from ecobench.planning.serve_point import serve_point as point

    given = {"batch": batch, "input_tokens": input_tokens, "output_tokens": output_tokens, "tensor": tensor}
    for name, value in given.items():
        if value is None and name == "tensor":
            continue
        lo, hi = bounds.type_limits(getattr(bounds, _SERVE_POINT_INTEGERS[name]))
        if isinstance(value, bool) or not isinstance(value, int) or (lo is not None and value < lo) or (
                hi is not None and value > hi):
            raise InputError(f"ecobench.serve_point: {name} {value!r}: allowed: an integer"
                             f"{bounds.limits_text(lo, hi)}")
    for name, text in {"model": model, "instance_type": instance_type, "precision": precision,
                       "stack": stack, "weight_precision": weight_precision,
                       "kv_cache_precision": kv_cache_precision, "quantization": quantization,
                       "backend": backend}.items():
        optional = name in ("stack", "weight_precision", "kv_cache_precision", "quantization")
        if not isinstance(text, str) and not (optional and text is None):
            raise InputError(f"ecobench.serve_point: {name} must be a str, got {type(text).__name__}")
    if lnc is not None and (isinstance(lnc, bool) or lnc not in (1, 2)):
        raise InputError(f"ecobench.serve_point: lnc {lnc!r}: allowed: 1 or 2 (trn2 instances only)")
    try:
        p = point(model, instance_type, precision, batch, input_tokens, output_tokens, tensor, stack,
                  weight_precision, kv_cache_precision, quantization, backend, lnc)
    except BackendError as exc:
        raise InputError(f"ecobench.serve_point: {exc}") from None
    return p.to_dict()


def load_run(directory: str | os.PathLike[str]) -> Result:
    """A run directory written by ``ecobench run`` or :meth:`Result.write` (or its results.json),
    read back: the same rows, recommendations and document as when it was written."""
    from ecobench.reports.tables import read_results
    from ecobench.version import RESULTS_KIND

    path = _path(directory, "ecobench.load_run: directory")
    doc = read_results(path)
    if doc.get("kind") != RESULTS_KIND or "scenario" not in doc:
        raise InputError(f"{path}: not a run directory's results.json (kind {doc.get('kind')!r}); "
                         "a baseline file is read by `ecobench check`")
    run_dir = path if path.is_dir() else path.parent
    tables = [f for f in (run_dir / "results.csv", run_dir / "results.parquet") if f.is_file()]
    return Result(doc, csv_path=tables[0] if tables else None, directory=run_dir)
