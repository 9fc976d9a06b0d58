"""Measured power: the corpus the draw model is fitted on and held out against.

Package data ``data/measured/*.yaml``: sources (citation, url, date, what was metered and how, what the
source does not state, the independent ``group`` whose points are held out together) and points (the
workload in the schema of the published throughput points, the hardware, and the average measured
draw per device or per node, with the throughput of the same run where published). Points on chips
outside the catalog (``gpu: other``) are kept as evidence and not fitted. No point is an AWS claim
about the two seed experiments.
"""

from __future__ import annotations

import datetime
import functools
import re
from importlib import resources
from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from ecobench.bounds import (
    MAX_DEGREE,
    MAX_GLOBAL_BATCH,
    MAX_INSTANCES,
    MAX_LATENCY_MS,
    MAX_POWER_W,
    MAX_THROUGHPUT_PER_S,
    MAX_TOKENS,
    MAX_WINDOW_S,
    NAME_PATTERN,
)
from ecobench.io.yamlio import load_packaged
from ecobench.scenario.base import SchemaModel
from ecobench.words import shown
from ecobench.workloads.architecture import Architecture
from ecobench.workloads.presets import preset

PowerKind = Literal["power_train", "power_serve", "power_infer"]
Metered = Literal["device", "node", "facility"]
MAX_OVER_LIMIT = 1.2  # a mean draw above 1.2x the chip's maximum is refused as a data error


AS_OF_ALLOWED = "an ISO date, YYYY-MM-DD or YYYY-MM (e.g. 2026-11-28 or 2026-11)"


def iso_date(text: str) -> bool:
    """Whether ``text`` is a calendar date written YYYY-MM-DD, or a month YYYY-MM (a source's as_of)."""
    if not re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", text):
        return False
    try:
        datetime.date.fromisoformat(text if len(text) == 10 else f"{text}-01")
    except ValueError:  # 2026-13, 2026-02-30
        return False
    return True


class _Row(SchemaModel):
    """Unknown fields refused, frozen, and numbers checked as a scenario's are (no boolean, no text that is
    no number, the field's whole range said): a calibration file is read with the scenario's messages."""


class PowerSource(_Row):
    citation: str
    url: str
    as_of: str
    group: str = Field(description="independent group: its points are held out together")
    metered: Metered = Field(description="what the meter covers")
    method: str
    not_stated: str
    window_idle_s: float = Field(0.0, ge=0, le=MAX_WINDOW_S,
                                 description="seconds of each run's metering window with nothing running "
                                 "(a script's sleeps around the run): drawn as stalls")

    @field_validator("as_of", mode="before")
    @classmethod
    def _date_as_text(cls, v: Any) -> Any:
        """``as_of: 2026-11-20`` unquoted is a date to YAML: kept as its ISO text (it was refused as
        'Input should be a valid string'); text that is no ISO date (``last week``, ``11/2026``) is
        refused."""
        v = v.isoformat() if isinstance(v, datetime.date) else v
        if isinstance(v, str) and not iso_date(v):
            raise ValueError(f"{shown(repr(v))} is not a date; allowed: {AS_OF_ALLOWED}")
        return v


class PowerPoint(_Row):
    """One measured average draw and the workload that drew it."""

    id: str = Field(pattern=NAME_PATTERN)  # as a scenario's names: said in words when refused
    source: str
    kind: PowerKind
    model_name: str
    model: str | None = None
    architecture: dict[str, Any] | None = None
    gpu: str = Field(description="catalog accelerator key, or 'other' (kept as evidence, not fitted)")
    chip: str | None = Field(None, description="for gpu 'other': a key of data/corpus_chips.yaml, a chip "
                             "outside the catalog with sourced peaks (the point is then fitted)")
    instance_type: str | None = None
    devices: int = Field(gt=0, le=MAX_DEGREE,
                         description="accelerators the measurement covers (per node if per node)")
    nodes: int = Field(1, gt=0, le=MAX_INSTANCES)
    precision: str | None = None
    weight_precision: str | None = None
    engine: str | None = None
    batch_size: float | None = Field(None, gt=0, le=MAX_GLOBAL_BATCH)
    avg_batch_size: float | None = Field(None, gt=0, le=MAX_GLOBAL_BATCH)
    concurrency: int | None = Field(None, gt=0, le=MAX_GLOBAL_BATCH)
    input_tokens: float | None = Field(None, gt=0, le=MAX_TOKENS)
    output_tokens: float | None = Field(None, gt=0, le=MAX_TOKENS)
    seq_len: int | None = Field(None, gt=0, le=MAX_TOKENS)
    tensor: int | None = Field(None, gt=0, le=MAX_DEGREE)
    pipeline: int | None = Field(None, gt=0, le=MAX_DEGREE)
    global_batch_size: int | None = Field(None, gt=0, le=MAX_GLOBAL_BATCH)
    trainable: Literal["full", "lora"] = Field(
        "full", description="training updates every weight, or low-rank adapters only (no weight "
        "gradients: 4N FLOPs a token)")
    layout: dict[str, Any] | None = None
    breakdown: dict[str, Any] | None = None
    power_w: float = Field(gt=0, le=MAX_POWER_W, description="mean draw over the measured window")
    power_per: Literal["device", "node"]
    power_stat: Literal["mean", "median", "peak"] = "mean"
    power_limit_w: float | None = Field(
        None, gt=0, le=MAX_POWER_W, description="the device power limit the run set, as its source states "
        "it (MLPerf MaxQ submissions: nvidia-smi -pl from the submitter's config); the draw model scales "
        "idle to this limit instead of the chip's maximum")
    tokens_per_s: float | None = Field(None, gt=0, le=MAX_THROUGHPUT_PER_S)
    output_tokens_per_s: float | None = Field(None, gt=0, le=MAX_THROUGHPUT_PER_S)
    samples_per_s: float | None = Field(None, gt=0, le=MAX_THROUGHPUT_PER_S)
    tpot_ms: float | None = Field(None, gt=0, le=MAX_LATENCY_MS)
    energy_j_per_output_token: float | None = Field(None, gt=0)
    energy_j_per_sample: float | None = Field(None, gt=0)
    gpu_busy_share: float | None = Field(
        None, gt=0, le=1, description="share of the run the GPU ran kernels, measured with a profiler "
        "(serving and inference points): the rest is host-side gaps")
    derived: str | None = None
    exclude_reason: str | None = Field(None, description="why the point is kept as evidence, not fitted")
    note: str

    @model_validator(mode="after")
    def _one_model(self) -> Self:
        if self.model is not None and self.architecture is not None:
            raise ValueError(f"{self.id}: give model or architecture, not both")
        return self

    @property
    def arch(self) -> Architecture | None:
        """The model, where the point names a preset or an inline decoder/encoder."""
        if self.model is not None:
            return preset(self.model)
        if self.architecture is not None:
            return Architecture(name=self.id, **self.architecture)
        return None

    @property
    def batch(self) -> float | None:
        return self.avg_batch_size or self.batch_size


class PowerCorpus(_Row):
    sources: dict[str, PowerSource]
    points: tuple[PowerPoint, ...]

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        seen: set[str] = set()
        for p in self.points:
            if p.id in seen:
                raise ValueError(f"point id {p.id!r} appears twice")
            seen.add(p.id)
            if p.source not in self.sources:
                raise ValueError(f"{p.id}: unknown source {p.source!r}")
            if p.chip is not None and (p.gpu != "other" or p.chip not in corpus_chips()):
                raise ValueError(f"{p.id}: chip {p.chip!r} needs gpu: other and a key of corpus_chips.yaml "
                                 f"({', '.join(sorted(corpus_chips()))})")
        return self

    def group(self, p: PowerPoint) -> str:
        return self.sources[p.source].group

    def metered(self, p: PowerPoint) -> Metered:
        return self.sources[p.source].metered


def parse_corpus(docs: list[dict[str, Any]]) -> PowerCorpus:
    """One corpus from several files' ``sources`` and ``points`` (raises pydantic's ValidationError)."""
    sources: dict[str, Any] = {}
    points: list[Any] = []
    for d in docs:
        for k, v in d.get("sources", {}).items():
            if k in sources:
                raise ValueError(f"source {k!r} is defined twice")
            sources[k] = v
        points += d.get("points", [])
    return PowerCorpus.model_validate({"sources": sources, "points": points})


class CorpusChip(_Row):
    """A chip the corpus meters that the catalog does not sell, with datasheet peaks."""

    name: str
    peak_tflops: dict[str, float]
    memory_bandwidth_gb_per_s: float = Field(gt=0)
    max_w: float = Field(gt=0)
    idle_w: float = Field(ge=0)
    source: str
    as_of: str
    ceiling_unknown: str | None = Field(None, description="why max_w is not the chip's draw ceiling: its "
                                        "points are kept as evidence, not fitted (the draw model scales "
                                        "the idle-to-maximum range)")


@functools.cache
def corpus_chips() -> dict[str, CorpusChip]:
    """The packaged chips outside the catalog (``data/corpus_chips.yaml``)."""
    text = (resources.files("ecobench.power") / "data" / "corpus_chips.yaml").read_text(encoding="utf-8")
    return {k: CorpusChip.model_validate(v) for k, v in load_packaged(text)["chips"].items()}


@functools.cache
def load_corpus() -> PowerCorpus:
    """The packaged measured-power corpus."""
    folder = resources.files("ecobench.power") / "data" / "measured"
    docs = [load_packaged(f.read_text(encoding="utf-8"))
            for f in sorted(folder.iterdir(), key=lambda f: f.name) if f.name.endswith(".yaml")]
    return parse_corpus(docs)
