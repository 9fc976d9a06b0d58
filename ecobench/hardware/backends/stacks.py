"""Where a software stack's fitted factors apply: the vendors and modes of the published points the
stored fit took them from.

A configuration's ``stack`` (or ``serve-point --stack``) selects that stack's fitted factors
(``efficiency.Fit.efficiency``): its compute factor, and for serving its step, per-sequence and
request costs. Those factors are fitted on the stack's own published points only, all of one vendor and
mode (optimum-neuron's on Inferentia2 and Trainium serving, Megatron's on NVIDIA training, ...), so a
stack named on another vendor's chips, or for another mode, would apply factors measured on other
hardware or work (``stack: optimum-neuron`` on a p5.48xlarge served Llama 3 8B at a 42% slower TPOT
than the typical NVIDIA stack; ``stack: tensorrt-llm`` trained Llama 2 7B 8% faster): it is bad input.
"""

from __future__ import annotations

import functools

__all__ = ["stack_refusal", "stack_scopes"]

VENDOR_WORDS = {"aws": "AWS Neuron (Inferentia, Trainium)", "nvidia": "NVIDIA"}


@functools.cache
def stack_scopes() -> dict[str, frozenset[tuple[str, str]]]:
    """Each fitted stack's (vendor, mode) pairs: those of the published points the stored fit holds."""
    from ecobench.hardware.backends.efficiency import current_fit
    from ecobench.hardware.catalog import load_catalog
    from ecobench.hardware.published import load_points

    pts, cat = load_points(), load_catalog()
    fitted = set(current_fit().points)
    out: dict[str, set[tuple[str, str]]] = {}
    for p in pts.points:
        if p.id not in fitted:
            continue
        stack = p.stack or pts.sources[p.source].stack
        if p.system is not None:
            acc = cat.accelerators[pts.systems[p.system].accelerator]
        else:
            acc = cat.accelerator_of(cat.instance(p.instance_type or ""))
        if acc is not None:
            out.setdefault(stack, set()).add((acc.vendor, p.mode))
    return {k: frozenset(v) for k, v in out.items()}


def stack_refusal(stack: str | None, vendor: str, mode: str, where: str) -> str | None:
    """Why ``stack`` cannot be priced on a ``vendor`` chip in ``mode`` (None: it can, or no stack is
    named: the vendor's typical), naming the stacks fitted there. ``where``: the chip in words."""
    from ecobench.hardware.backends.efficiency import fitted_stacks

    if stack is None:
        return None
    scopes = stack_scopes()
    runs = scopes.get(stack)
    if runs is None or (vendor, mode) in runs:  # unknown names are refused by name elsewhere
        return None
    ran = "; ".join(f"{VENDOR_WORDS.get(v, v)} {m}" for v, m in sorted(runs))
    allowed = [s for s in fitted_stacks() if (vendor, mode) in scopes.get(s, frozenset())]
    return (f"{stack} is fitted on published {ran} runs only, not on {where} for {mode}; allowed: "
            + (", ".join(allowed) + ", or " if allowed else "")
            + "no stack (the vendor's typical)")
