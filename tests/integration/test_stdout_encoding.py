"""The command on a stdout that is not UTF-8: PYTHONIOENCODING=ascii, a latin-1 locale, a Windows
console. The tables hold Δ, ± and ≤; they come out as backslash escapes, never as exit 3."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, SCENARIOS


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_run_on_a_stdout_that_is_not_utf8_prints_escapes_and_exits_0(tmp_path, encoding):
    """`ecobench run` wrote the run directory, then failed printing its table: 'internal error:
    UnicodeEncodeError: 'ascii' codec can't encode character '\\u0394' ... (this is a bug in
    ecobench)', exit 3, so a CI step on such a runner failed every time."""
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONIOENCODING=encoding)
    p = subprocess.run([sys.executable, "-m", "ecobench", "run", str(SCENARIOS / "llama3_8b_chat.yaml"), "-q",
                        "--out", str(out)], capture_output=True, cwd=ROOT, env=env, timeout=300)
    assert p.returncode == 0, p.stderr.decode(encoding, "replace")
    stdout = p.stdout.decode(encoding)
    assert "cost \\u0394%" in stdout and "Δ" not in stdout
    assert json.loads((out / "results.json").read_text())["scenario"]["name"] == "llama3_8b_chat"


def test_a_utf8_stdout_is_left_as_it_is(tmp_path):
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    p = subprocess.run([sys.executable, "-m", "ecobench", "run", str(SCENARIOS / "llama3_8b_chat.yaml"), "-q",
                        "--out", str(tmp_path / "run")], capture_output=True, cwd=ROOT, env=env, timeout=300)
    assert p.returncode == 0 and "cost Δ%" in p.stdout.decode("utf-8")


@pytest.mark.parametrize("args", [["run", str(SCENARIOS / "llama3_8b_chat.yaml"), "-q"], ["validate", "-q"]])
def test_no_text_is_read_in_the_locales_encoding(tmp_path, args):
    """The packaged power corpus (power/corpus.py) and git's output (reports/metadata.py) were read
    in the locale's encoding: UTF-8 text read wrong, or not at all, where the locale is another
    (Windows, a latin-1 locale). Python's EncodingWarning names every such read."""
    if args[0] == "run":
        args = [*args, "--out", str(tmp_path / "run")]
    p = subprocess.run([sys.executable, "-X", "warn_default_encoding", "-m", "ecobench", *args],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    ours = [line for line in p.stderr.splitlines() if "EncodingWarning" in line and "ecobench" in line]
    assert ours == []
