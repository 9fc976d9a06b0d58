"""Logical NeuronCore configuration (LNC): how many physical NeuronCores one rank is.

What the Neuron documents say (:data:`SOURCES`): LNC is a compiler and runtime setting of Trainium2
(``NEURON_LOGICAL_NC_CONFIG`` at run time, ``--logical-nc-config``/``--lnc`` at compile time, the two
must agree) that groups physical NeuronCores, with their compute and memory, into one logical
NeuronCore that the compiler, runtime and frameworks treat as one core (one rank); every Trainium2
has eight physical NeuronCore-v3; the SDK supports an LNC of 1 or 2; neuronx-cc defaults to LNC=2 on
Trn2; on Trn1 only LNC=1 is supported (Inferentia2 has the same two NeuronCore-v2 a chip).

What a setting changes here: the ranks per chip (the physical cores over the LNC: 8 at LNC=1, 4 at
LNC=2 on Trainium2), and so each rank's share of the chip's peak, memory, bandwidth and links
(``hardware/cluster.py`` divides the chip's figures by ``ranks_per_chip``), the tensor degrees and
replicas a plan picks from, the emulated NeuronCore's logical core (its engines and DMA queues are
the physical cores it groups, ``neuron/arch.py``) and the serving stacks' prefill attention kernel
(``parallel/serving.py`` ``prefill_fused_attention``). The catalog describes each chip at its
default; :func:`catalog_at_lnc` gives the catalog at another setting.
"""

from __future__ import annotations

import dataclasses

from ecobench.errors import InputError
from ecobench.hardware.catalog import Catalog
from ecobench.hardware.neuron.arch import DEVICES, NeuronDeviceSpec, logical_core_size

SDK_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
LNC_DOC = f"{SDK_DOCS}/general/arch/neuron-features/logical-neuroncore-config.html (read 2026-11-29)"
SOURCES = {
    "LNC groups physical NeuronCores (compute and memory) into one logical core; eight NeuronCore-v3 "
    "per Trainium2; NEURON_LOGICAL_NC_CONFIG and --logical-nc-config must agree": LNC_DOC,
    "the Neuron SDK supports an LNC degree of 1 or 2": f"{SDK_DOCS}/nki/get-started/about/lnc.html "
                                                       "(v2.33.1, read 2026-11-29)",
    "neuronx-cc defaults to LNC=2 on Trn2 and later": f"{SDK_DOCS}/compiler/error-codes/EVRF066.html "
                                                      "(read 2026-11-29)",
    "on trn1 only lnc=1 is supported": f"{SDK_DOCS}/compiler/error-codes/EARG001.html (read 2026-11-29)",
}
# Accelerator (catalog key) -> the LNC settings its Neuron SDK offers (SOURCES); a chip not listed has
# no setting (Inferentia2 and Trainium: one physical core a rank; GPUs: no NeuronCores).
LNC_OPTIONS: dict[str, tuple[int, ...]] = {"trainium2": (1, 2)}


def lnc_options(accelerator: str | None) -> tuple[int, ...]:
    """The LNC settings ``accelerator`` offers (empty: none to choose)."""
    return LNC_OPTIONS.get(accelerator or "", ())


def default_lnc(accelerator: str | None) -> int | None:
    """The setting a chip with a choice runs at unless one is given (Trainium2: 2; None: no choice)."""
    return logical_core_size(accelerator) if lnc_options(accelerator) else None


def physical_cores(accelerator: str | None) -> int | None:
    """Physical NeuronCores a chip has (None: not a Neuron chip)."""
    dev = DEVICES.get(accelerator or "")
    return dev.cores * dev.core.physical if dev else None


def lnc_refusal(accelerator: str | None, instance_type: str, lnc: int) -> str | None:
    """Why ``lnc`` cannot be set on ``instance_type`` (None: it can), naming what is allowed."""
    options = lnc_options(accelerator)
    with_it = sorted(k for k in LNC_OPTIONS)
    if not options:
        what = (f"{instance_type}'s {accelerator} runs one physical NeuronCore a rank (LNC=1 only) and has"
                if accelerator in DEVICES else f"{instance_type} has no NeuronCores, so")
        return (f"{lnc}: {what} no logical NeuronCore setting; allowed: lnc on "
                f"{', '.join(with_it)} (trn2) instances only; remove it")
    if lnc not in options:
        return f"{lnc}: allowed on {instance_type}: {' or '.join(map(str, options))}"
    return None


def catalog_at_lnc(cat: Catalog, accelerator: str | None, lnc: int | None) -> Catalog:
    """``cat`` with ``accelerator`` at ``lnc`` physical cores a rank (None, or the chip's default: ``cat``
    itself): its ranks per chip are its physical cores over ``lnc``. Raises ValueError for a setting the
    chip does not offer (:func:`lnc_refusal` says why)."""
    if lnc is None or accelerator is None or lnc == logical_core_size(accelerator):
        return cat
    if lnc not in lnc_options(accelerator):
        raise ValueError(f"{accelerator} offers LNC {lnc_options(accelerator) or 'none'}, not {lnc}")
    cores = physical_cores(accelerator)
    assert cores is not None  # a chip with options is a Neuron chip
    acc = cat.accelerators[accelerator].model_copy(update={"ranks_per_chip": cores // lnc})
    return cat.model_copy(update={"accelerators": {**cat.accelerators, accelerator: acc}})


def given_lnc(cat: Catalog, accelerator: str | None, instance_type: str, lnc: int | None) -> Catalog:
    """The catalog with ``instance_type``'s chip at a given ``lnc`` (None: ``cat`` itself); bad input, in
    :func:`lnc_refusal`'s words, for a setting the chip does not offer. A scenario's ``configs[].lnc`` and
    ``serve-point --lnc`` are both checked and applied here."""
    if lnc is None:
        return cat
    if (why := lnc_refusal(accelerator, instance_type, lnc)) is not None:
        raise InputError(why)
    return catalog_at_lnc(cat, accelerator, lnc)


def describe_lnc(cat: Catalog, accelerator: str | None) -> str:
    """'LNC=1: 8 ranks a chip, one physical NeuronCore each', for a result's method."""
    lnc, cores = lnc_of(cat, accelerator), physical_cores(accelerator) or 0
    each = "one physical NeuronCore" if lnc == 1 else f"{lnc} physical NeuronCores"
    return f"LNC={lnc}: {cores // lnc} ranks a chip, {each} each"


def lnc_of(cat: Catalog, accelerator: str | None) -> int:
    """Physical NeuronCores per rank of ``accelerator`` in ``cat`` (1: not a Neuron chip)."""
    cores = physical_cores(accelerator)
    if cores is None or accelerator not in cat.accelerators:
        return 1
    return max(1, cores // cat.accelerators[accelerator].ranks_per_chip)


def device_at_lnc(dev: NeuronDeviceSpec, lnc: int) -> NeuronDeviceSpec:
    """The Neuron chip with logical cores of ``lnc`` physical ones: ``dev`` itself at its own setting;
    else as many more (or fewer) logical cores, each with ``lnc`` cores' engines and DMA queues (the
    engine model's logical core, ``neuron/arch.py``)."""
    if lnc == dev.core.physical:
        return dev
    base = dev.core.name.split(" (")[0]
    core = dataclasses.replace(dev.core, physical=lnc, name=f"{base} (LNC={lnc})")
    return dataclasses.replace(dev, core=core, cores=dev.cores * dev.core.physical // lnc,
                               source=f"{dev.source}; at LNC={lnc}: {LNC_DOC}")


def device_in(cat: Catalog, accelerator: str) -> NeuronDeviceSpec:
    """The emulated Neuron chip ``accelerator`` at the LNC setting ``cat`` describes it at."""
    return device_at_lnc(DEVICES[accelerator], lnc_of(cat, accelerator))
