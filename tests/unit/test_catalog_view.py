"""One catalog instance as a table (``ecobench/reports/catalog_view.py``): every figure on a line with
the number of its nearest source, the sources listed once below."""

from ecobench.reports.catalog_view import figure_rows, instance_table

RECORD = {
    "instance": {"name": "x1", "spec": {"source": "https://spec", "as_of": "2024-01", "inferred_from": None,
                                        "note": None, "vcpus": 8, "memory_gib": 32.0, "cpu_power_note": "n",
                                        "link": {"source": "https://link", "as_of": "2025", "gb_per_s": 64.0},
                                        "accelerator_memory": None}},
    "accelerator": {"name": "chip", "peak_tflops": {"bf16": 190.0}, "max_zero_stage": 1,
                    "max_zero_stage_source": "https://zero", "spec_source": "https://chip",
                    "spec_as_of": "2024-09", "spec_inferred_from": None, "tdp_w": None, "tdp_source": None,
                    "power": {"source": "evidence below", "max_w": 243.6, "evidence": (
                        {"line": "parity", "estimate_w": 240.0, "source": "https://a100"},), "extra": ()}},
}


def test_each_figure_gets_its_nearest_source():
    sources: list[str] = []
    rows = {f: (v, sources[m - 1] if m else None) for f, v, m in figure_rows(RECORD, sources)}
    assert rows["instance.spec.vcpus"] == ("8", "https://spec (as of 2024-01)")
    assert rows["instance.spec.memory_gib"] == ("32", "https://spec (as of 2024-01)")
    assert rows["instance.spec.cpu_power_note"][0] == "n"  # a note with no source of its own is a figure
    assert rows["instance.spec.link.gb_per_s"] == ("64", "https://link (as of 2025)")
    assert rows["accelerator.peak_tflops.bf16"] == ("190", "https://chip (as of 2024-09)")  # spec_source
    assert rows["accelerator.max_zero_stage"] == ("1", "https://zero")  # its own <figure>_source
    assert rows["accelerator.power.evidence[0].estimate_w"] == ("240", "https://a100")
    assert rows["accelerator.power.max_w"][1] == "evidence below"
    assert rows["instance.name"] == ("x1", None)
    # no provenance fields, no empty figure (None, an empty list) shown as a figure
    assert not any(f.endswith(("source", "as_of", "inferred_from")) for f in rows)
    empty = {"instance.spec.accelerator_memory", "accelerator.tdp_w", "accelerator.power.extra"}
    assert not empty & set(rows)


def test_the_table_lists_every_source_once():
    text = instance_table(RECORD)
    lines = text.splitlines()
    assert lines[0].split() == ["figure", "source", "value"]
    assert "sources:" in lines and text.count("https://spec") == 1
    vcpus = next(line for line in lines if line.startswith("instance.spec.vcpus "))
    number = vcpus.split()[1]
    assert vcpus.split()[2] == "8" and f"{number} https://spec (as of 2024-01)" in lines


def test_a_terminal_wraps_long_values_and_sources_under_their_column():
    """new-user try: `ecobench catalog inf2.xlarge` at 80 columns printed 19 lines of 120-520
    characters (notes, sources), broken by the terminal mid-word; piped, each stays one line."""
    record = {"instance": {**RECORD["instance"], "note_text": "word " * 40}}
    piped = instance_table(record)
    wrapped = instance_table(record, width=60)
    assert max(map(len, piped.splitlines())) > 60
    lines = wrapped.splitlines()
    assert all(len(line) <= 60 or " " not in line.strip() for line in lines), lines
    start = next(i for i, line in enumerate(lines) if line.startswith("instance.note_text"))
    column = lines[0].index("value")
    assert lines[start][column:].startswith("word") and lines[start + 1][:column].strip() == ""
    assert " ".join(wrapped.split()) == " ".join(piped.split())  # the same words, only wrapped
