"""Model presets: the published configurations of the models the seed scenarios use."""

from __future__ import annotations

from ecobench.errors import UnknownNameError
from ecobench.workloads.transformer import Architecture

# Figures from the models' transformers configs (BertConfig / LayoutLMConfig defaults and the
# published bert-large-uncased / microsoft/layoutlm-base-uncased configs).
PRESETS: dict[str, Architecture] = {
    "bert-base": Architecture("bert-base", layers=12, hidden_size=768, heads=12,
                              intermediate_size=3072, vocab_size=30522),
    "bert-large": Architecture("bert-large", layers=24, hidden_size=1024, heads=16,
                               intermediate_size=4096, vocab_size=30522),
    "layoutlm-base": Architecture("layoutlm-base", layers=12, hidden_size=768, heads=12,
                                  intermediate_size=3072, vocab_size=30522, layout_2d=True),
}


def preset(name: str) -> Architecture:
    """The preset ``name``; an unknown name suggests the nearest known ones."""
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownNameError("model preset", name, PRESETS) from None
