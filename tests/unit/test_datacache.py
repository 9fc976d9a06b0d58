import os
import pickle

import pytest

from ecobench.hardware import catalog
from ecobench.io import datacache
from ecobench.io.datacache import CACHE_ENV, cached


class _Exploit:
    """Unpickling this would run a shell command."""

    def __reduce__(self):
        return (os.system, ("touch pwned",))


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


class Box:
    """Something to cache, defined in this module."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Box) and other.value == self.value


def counting(value):
    calls = []

    def build():
        calls.append(1)
        return value
    return build, calls


def test_the_second_call_reads_what_the_first_saved(folder):
    build, calls = counting(Box({"a": [1, 2.5]}))
    assert cached("t", ["text"], Box, build) == Box({"a": [1, 2.5]})
    assert cached("t", ["text"], Box, build) == Box({"a": [1, 2.5]})
    assert len(calls) == 1
    assert len(list(folder.glob("t-*.pickle"))) == 1


def test_other_sources_build_again(folder):
    build, calls = counting(Box(1))
    cached("t", ["one"], Box, build)
    cached("t", ["two"], Box, build)
    assert len(calls) == 2
    assert len(list(folder.glob("t-*.pickle"))) == 2


def test_a_file_that_would_run_code_is_refused(folder, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    build, calls = counting(Box("parsed"))
    cached("t", ["x"], Box, build)
    (path,) = folder.glob("t-*.pickle")
    path.write_bytes(pickle.dumps(_Exploit()))
    assert cached("t", ["x"], Box, build) == Box("parsed")
    assert not (tmp_path / "pwned").exists()
    assert len(calls) == 2


def test_a_corrupt_file_is_parsed_again(folder):
    build, calls = counting(Box("parsed"))
    cached("t", ["x"], Box, build)
    (path,) = folder.glob("t-*.pickle")
    path.write_bytes(b"\x80\x05garbage")
    assert cached("t", ["x"], Box, build) == Box("parsed")
    assert len(calls) == 2


def test_off_and_unwritable(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, "off")
    assert datacache.cache_dir() is None
    build, calls = counting(Box(3))
    assert cached("t", ["x"], Box, build) == Box(3)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))
    assert cached("t", ["x"], Box, build) == Box(3)
    assert len(calls) == 2


def test_the_cached_catalog_is_the_validated_one(folder):
    texts = [(catalog.resources.files("ecobench.hardware") / f"data/{n}").read_text(encoding="utf-8")
             for n in catalog.FILES]
    fresh = catalog._validate(*(catalog.load_packaged(t) for t in texts))
    catalog.load_catalog.cache_clear()
    try:
        first = catalog.load_catalog()  # parsed, then saved
        catalog.load_catalog.cache_clear()
        second = catalog.load_catalog()  # read back
    finally:
        catalog.load_catalog.cache_clear()
    assert first == fresh and second == fresh and second is not first
    assert len(list(folder.glob("catalog-*.pickle"))) == 1


def test_only_classes_defined_in_the_module_are_built(folder):
    build, calls = counting(Box("parsed"))
    cached("t", ["x"], Box, build)
    (path,) = folder.glob("t-*.pickle")
    path.write_bytes(pickle.dumps(pytest.MonkeyPatch()))  # a class imported here, not defined here
    assert cached("t", ["x"], Box, build) == Box("parsed")
    path.write_bytes(pickle.dumps(_Exploit))  # defined here, but not what was asked for
    assert cached("t", ["x"], Box, build) == Box("parsed")
    assert len(calls) == 3
