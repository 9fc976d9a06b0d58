"""SIGTERM is handled like Ctrl-C (clean up, exit 143), mid-measurement and mid-write; a closed
stdout ends quietly; an unexpected error is one line and exit 3, never a traceback or exit 1."""

import signal
import subprocess
import sys
import time

import pytest
import yaml

from ecobench.cli import main
from tests.conftest import SCENARIOS

LAYOUTLM = str(SCENARIOS / "layoutlm_realtime.yaml")


_MID_WRITE = """
import os, signal, sys, time
import ecobench.runner as run_mod
from ecobench.cli import entry
real = run_mod.write_html
SIG = getattr(signal, sys.argv[1])
def signalled(doc, path):
    real(doc, path)  # the directory is half written when the signal arrives
    os.kill(os.getpid(), SIG)
    time.sleep(5)  # the handler runs before this returns
run_mod.write_html = signalled
sys.argv = ["ecobench", "run", sys.argv[2], "--results", sys.argv[3]]
entry()
"""


@pytest.mark.parametrize("sig,code,word", [("SIGTERM", 143, "terminated"), ("SIGINT", 130, "interrupted")])
def test_signal_mid_write_removes_the_run_directory(tmp_path, sig, code, word):
    """The folders the run made for itself go too: an interrupted first run into a results root
    left an empty results/layoutlm_realtime/ (and the root) behind while saying nothing was written."""
    root = tmp_path / "results"
    p = subprocess.run([sys.executable, "-c", _MID_WRITE, sig, LAYOUTLM, str(root)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == code, p.stderr
    assert list(tmp_path.iterdir()) == []
    assert word in p.stderr and "nothing was written" in p.stderr and "Traceback" not in p.stderr


def test_signal_mid_write_keeps_a_results_folder_that_was_there(tmp_path):
    earlier = tmp_path / "layoutlm_realtime" / "20260101T000000Z-aaaaaa"
    earlier.mkdir(parents=True)
    (earlier / "results.json").write_text("{}")
    p = subprocess.run([sys.executable, "-c", _MID_WRITE, "SIGINT", LAYOUTLM, str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 130, p.stderr
    assert list((tmp_path / "layoutlm_realtime").iterdir()) == [earlier]
    assert (earlier / "results.json").read_text() == "{}"


def test_main_leaves_the_callers_sigterm_handler_alone(monkeypatch):
    import signal as sig_mod

    seen = []

    def probe(args):
        seen.append(sig_mod.getsignal(sig_mod.SIGTERM))
        return 0

    monkeypatch.setattr("ecobench.cli.cmd_catalog", probe)
    before = sig_mod.getsignal(sig_mod.SIGTERM)
    main(["catalog"])
    assert seen == [before]


def _measured_scenario(tmp_path):
    s = {"schema_version": 1, "name": "tiny",
         "workload": {"architecture": {"layers": 2, "hidden_size": 64, "heads": 2, "intermediate_size": 128,
                                       "vocab_size": 500, "max_position_embeddings": 64},
                      "inference": {"rate_per_h": 3600, "seq_len": 32, "batch_size": 2}},
         "configs": [{"id": "h", "instance_type": "local", "backend": "reference", "device": "cpu"}],
         "baseline": "h",
         "measurement": {"warmup_s": 0.1, "min_window_s": 0.5, "repetitions": 200, "gemm_s": 0,
                         "track_energy": True}}
    f = tmp_path / "tiny.yaml"
    f.write_text(yaml.safe_dump(s))
    return f


@pytest.mark.slow
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_mid_measurement_exits_cleanly(tmp_path, sig, code):
    pytest.importorskip("torch")
    f = _measured_scenario(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "ecobench", "run", str(f), "--results",
                             str(tmp_path / "res")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    seen = ""
    deadline = time.monotonic() + 120
    while "measuring" not in seen and time.monotonic() < deadline:
        ch = proc.stderr.read(1)
        if not ch:
            break
        seen += ch
    assert "measuring" in seen, seen
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, seen + err
    assert "Traceback" not in err and "nothing was written" in err
    res = tmp_path / "res"
    assert not res.exists() or [p for p in res.rglob("*")] in ([], [res / "tiny"])


def test_closed_stdout_ends_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "ecobench", "catalog"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader went away, as `| head -1` does
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.wait(timeout=60)
    assert proc.returncode == 141 and err == ""


def test_catalog_piped_to_head_has_no_traceback():
    proc = subprocess.run(["bash", "-c", f"'{sys.executable}' -m ecobench catalog | head -1"],
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.startswith("catalog") and proc.stderr == ""


def test_unexpected_error_is_one_line_exit_3_and_debug_shows_it(monkeypatch, capsys):
    import ecobench.hardware.catalog as catalog

    def broken():
        raise AttributeError("'NoneType' object has no attribute 'get'")

    monkeypatch.setattr(catalog, "load_catalog", broken)
    assert main(["catalog"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: AttributeError" in err and "Traceback" not in err
    assert main(["--debug", "catalog"]) == 3
    assert "Traceback" in capsys.readouterr().err
    assert main(["catalog", "--debug"]) == 3
    assert "Traceback" in capsys.readouterr().err


def test_sigterm_a_library_turned_into_its_own_error_still_exits_143(monkeypatch, capsys):
    """CI, 2026-11-27: SIGTERM landed while pydantic built a schema, which reported the Terminated as
    its own SchemaError: 'internal error ... this is a bug', exit 3. A signal is not a bug."""
    import ecobench.hardware.catalog as catalog
    from ecobench import process

    def swallowing():
        try:
            process._raise_terminated(signal.SIGTERM, None)  # what the handler does when SIGTERM lands
        except BaseException as exc:  # a library wrapping every exception in its own
            raise RuntimeError("Error building validator") from exc

    monkeypatch.setattr(catalog, "load_catalog", swallowing)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        assert main(["catalog"], exiting=True) == 143
    finally:
        signal.signal(signal.SIGTERM, previous)
    err = capsys.readouterr().err
    assert "terminated (SIGTERM)" in err and "internal error" not in err
    monkeypatch.undo()
    assert main(["catalog"]) == 0  # a caller's next command is not taken for a signalled one
    capsys.readouterr()


def test_sigint_a_library_turned_into_its_own_error_still_exits_130(monkeypatch, capsys):
    """CI, 2026-11-29: Ctrl-C landed 0.2 s into start-up while pydantic built a schema, which reported
    the KeyboardInterrupt as its own SchemaError: exit 3, 'this is a bug'. As SIGTERM's case above."""
    import ecobench.hardware.catalog as catalog
    from ecobench import process

    def swallowing():
        try:
            process._raise_interrupted(signal.SIGINT, None)  # what the handler does when SIGINT lands
        except BaseException as exc:
            raise RuntimeError("Error building validator") from exc

    monkeypatch.setattr(catalog, "load_catalog", swallowing)
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert main(["catalog"], exiting=True) == 130
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    err = capsys.readouterr().err
    assert "interrupted (SIGINT)" in err and "internal error" not in err
    monkeypatch.undo()
    assert main(["catalog"]) == 0
    capsys.readouterr()


def test_error_messages_cannot_drive_the_terminal(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text('"\\e]0;pwned\\a\\e[31mred": 1\n')  # an unknown field whose name drives the terminal
    assert main(["run", str(f)]) == 2
    err = capsys.readouterr().err
    assert "unknown field" in err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;pwned\\x07" in err


def _script(body: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", body, *args], capture_output=True, text=True, timeout=180)


_AFTER_RENAME = """
import os, signal, sys, time
import ecobench.io.rundir as rundir
from ecobench.cli import entry
real = os.rename
def renamed(a, b):
    real(a, b)  # the run directory is in place when the signal arrives
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
rundir.os.rename = renamed
sys.argv = ["ecobench", "run", sys.argv[1], "--out", sys.argv[2], "-q"]
entry()
"""


def test_sigterm_after_the_rename_says_the_run_is_complete(tmp_path):
    """Issue 24: it said "nothing was written" while the complete run stayed."""
    out = tmp_path / "run"
    p = _script(_AFTER_RENAME, LAYOUTLM, str(out))
    assert p.returncode == 143, p.stderr
    assert f"the run is complete at {out}" in p.stderr and "nothing was written" not in p.stderr
    assert (out / "results.json").is_file() and "Traceback" not in p.stderr


_TEARDOWN = """
import os, shutil, signal, sys, time
import ecobench.runner as run_mod
import ecobench.io.rundir as rundir
from ecobench.errors import InputError
from ecobench.cli import entry
def failing(doc, path):
    raise InputError("a failure while writing")
run_mod.write_html = failing
real = shutil.rmtree
def slow_rmtree(path, **kw):
    os.kill(os.getpid(), signal.SIGTERM)  # arrives while the half-written run is being removed
    time.sleep(0.2)
    real(path, **kw)
rundir.shutil.rmtree = slow_rmtree
sys.argv = ["ecobench", "run", sys.argv[1], "--results", sys.argv[2], "-q"]
entry()
"""


def test_sigterm_during_teardown_finishes_the_clean_up(tmp_path):
    p = _script(_TEARDOWN, LAYOUTLM, str(tmp_path))
    assert p.returncode == 143, p.stderr
    assert "Traceback" not in p.stderr and "nothing was written" in p.stderr
    assert list(tmp_path.iterdir()) == []  # not even the results/layoutlm_realtime/ folder the run made


_OOM = """
import sys, time
import ecobench.hardware.catalog as catalog
from ecobench.cli import entry
def huge():
    raise MemoryError()
catalog.load_catalog = huge
sys.argv = ["ecobench", "catalog"]
entry()
"""


def test_out_of_memory_is_one_prebuilt_line_and_exit_3():
    t0 = time.monotonic()
    p = _script(_OOM)
    assert p.returncode == 3 and "out of memory" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert time.monotonic() - t0 < 60


_GO = ("import os, runpy, sys, ecobench; os.write(2, b'go\\n'); sys.argv = ['ecobench', 'catalog']; "
       "runpy.run_module('ecobench', run_name='__main__')")


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_while_starting_has_no_traceback(sig, code):
    """Issue 24: SIGINT in the first 0.13 s printed a KeyboardInterrupt traceback. Timed from when
    the interpreter has started and found the package (its own start-up and site imports, and
    ``import ecobench``, 1 ms, come before any code of ours can run), as ``python -m ecobench``."""
    for delay in (0.0, 0.02, 0.05, 0.1, 0.2, 0.4):
        proc = subprocess.Popen([sys.executable, "-c", _GO], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stderr.readline() == "go\n"
        time.sleep(delay)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        if proc.returncode in (1, -sig) and "ecobench" not in err:
            continue  # the signal came while runpy was still locating __main__.py: Python's own code
        if proc.returncode in (1, -sig) and err.rstrip().endswith("KeyboardInterrupt") and \
                "_signal.signal(_signal.SIGINT, _starting)" in err:
            continue  # ... or while __main__.py's first line installed the handler: none exists yet
        assert "Traceback" not in err, (delay, err)
        assert proc.returncode in (code, 0), (delay, proc.returncode, err)
