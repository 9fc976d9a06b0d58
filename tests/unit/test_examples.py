"""The example scenarios are package data: every file an example reads is in the package folder and
matched by pyproject.toml's package-data, so a wheel holds it."""

import tomllib

import pytest

from ecobench.scenario import examples
from tests.conftest import ROOT

PACKAGE = ROOT / "ecobench"


def _packaged() -> set[str]:
    """The files under ecobench/ that setuptools installs as the package's data (its globs)."""
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    return {p.relative_to(PACKAGE).as_posix() for g in globs["ecobench"] for p in PACKAGE.glob(g)
            if p.is_file()}


@pytest.mark.parametrize("name", examples.names())
def test_an_example_and_every_file_it_reads_are_installed(name):
    files = [f"examples/{name}.yaml", *(f"examples/{f}" for f in examples.referenced(name))]
    assert all((PACKAGE / f).is_file() for f in files), files
    assert set(files) <= _packaged()


def test_a_referenced_file_is_found_and_text_is_not():
    assert examples.referenced("llama3_8b_finetune") == ["models/llama3-8b/config.json"]
    assert examples.referenced("layoutlm_realtime") == []  # ids, names and a long description: no files


def test_every_example_has_a_one_line_description():
    for name in examples.names():
        line = examples.describe(name)
        assert line and "\n" not in line, name
