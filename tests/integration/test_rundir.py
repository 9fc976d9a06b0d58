"""Run directories and written files: ordinary permissions, nothing left behind, stale leftovers
swept, and a read-only or full disk reported with exit 4 rather than a traceback."""

import errno
import os
import resource
import signal
import stat
import subprocess
import sys
import time

import pytest

from ecobench.cli import main
from ecobench.errors import InputError, OutputError
from ecobench.io.rundir import _host_tag, atomic_dir, probe_folder, sweep_stale, write_text_atomic
from tests.conftest import SCENARIOS

LAYOUTLM = str(SCENARIOS / "layoutlm_realtime.yaml")


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _leftovers(folder):
    return [p.name for p in folder.rglob(".*tmp*")]


def test_run_directory_and_files_get_ordinary_permissions(tmp_path, umask_022):
    assert main(["run", LAYOUTLM, "-q", "--out", str(tmp_path / "r")]) == 0
    assert stat.S_IMODE((tmp_path / "r").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "r" / "results.json").stat().st_mode) == 0o644
    write_text_atomic(tmp_path / "f.md", "x")
    assert stat.S_IMODE((tmp_path / "f.md").stat().st_mode) == 0o644


def test_writer_removes_its_temporary_file_on_failure(tmp_path, monkeypatch):
    def full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OutputError, match="disk full"):
        write_text_atomic(tmp_path / "out.xml", "<x/>")
    assert list(tmp_path.iterdir()) == []


def test_read_only_results_folder_is_exit_4(tmp_path, monkeypatch, capsys):
    def read_only(path, mode=0o777):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(os, "mkdir", read_only)
    code = main(["run", LAYOUTLM, "-q", "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 4 and "read-only file system" in err and "Traceback" not in err


@pytest.mark.parametrize("flag,below", [("--out", "x"), ("--out", "x/y"), ("--results", ""),
                                        ("--results", "x")])
def test_out_below_a_file_says_a_file_is_in_the_way(tmp_path, capsys, flag, below):
    (tmp_path / "afile").write_text("not a folder")
    code = main(["run", LAYOUTLM, "-q", flag, str(tmp_path / "afile" / below)])
    err = capsys.readouterr().err
    assert code == 2 and f"{tmp_path / 'afile'} is a file, not a folder" in err, err
    assert err.count("\n") == 1 and "File exists" not in err and "Not a directory" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"] and not _leftovers(tmp_path)


@pytest.mark.parametrize("flag", ["--out", "--results"])
def test_a_run_output_path_error_names_the_option_not_the_scenario(tmp_path, capsys, flag):
    """trial18: 'ecobench: error: SCENARIO: --out X: already exists; ...' put the scenario file first,
    as if the scenario were at fault, where baseline --to says '--to X: ...'."""
    (tmp_path / "afile").write_text("not a folder")
    target = tmp_path / "afile" if flag == "--results" else tmp_path
    assert main(["run", LAYOUTLM, "-q", flag, str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ecobench: error: {flag} {target}: "), err


@pytest.mark.parametrize("below", ["b.json", "x/b.json"])
def test_baseline_below_a_file_says_a_file_is_in_the_way(tmp_path, capsys, below):
    run = tmp_path / "r"
    assert main(["run", LAYOUTLM, "-q", "--out", str(run)]) == 0
    capsys.readouterr()  # the run's own 'wrote DIR/' line (stderr)
    (tmp_path / "afile").write_text("not a folder")
    to = tmp_path / "afile" / below
    assert main(["baseline", str(run), "--to", str(to)]) == 2
    err = capsys.readouterr().err
    assert err == f"ecobench: error: --to {to}: {tmp_path / 'afile'} is a file, not a folder\n"


def _limit_file_size():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE as a stand-in for a full disk")
def test_full_disk_is_exit_4_and_leaves_nothing(tmp_path):
    """A real write failure: the file-size limit makes every write past 2 KiB fail, as a full disk
    would (results.json and report.html are larger)."""
    proc = subprocess.run([sys.executable, "-m", "ecobench", "run", LAYOUTLM, "-q", "--results",
                           str(tmp_path / "res")], capture_output=True, text=True, timeout=120,
                          preexec_fn=_limit_file_size)
    assert proc.returncode == 4, proc.stderr
    assert "cannot write" in proc.stderr and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []  # not even the res/layoutlm_realtime/ folders the run made


def _dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_temporary_run_directory_is_swept_by_the_next_run(tmp_path, capsys):
    folder = tmp_path / "layoutlm_realtime"
    stale = folder / f".20260101T000000Z-abcdef.tmp-{_host_tag()}-{_dead_pid()}-123abc"
    stale.mkdir(parents=True)
    (stale / "results.json").write_text("{}")
    assert main(["run", LAYOUTLM, "-q", "--results", str(tmp_path)]) == 0
    assert not stale.exists()
    assert "swept stale temporary" in capsys.readouterr().err
    assert _leftovers(folder) == []


def test_running_or_foreign_or_unknown_leftovers_are_reported_not_swept(tmp_path):
    live = tmp_path / f".r1.tmp-{_host_tag()}-{os.getppid()}-aaaaaa"
    foreign = tmp_path / f".r2.tmp-00000000-{_dead_pid()}-bbbbbb"
    young = tmp_path / ".r3.tmp-abc_1234"
    old = tmp_path / ".r4.tmp-xyz_9876"
    for d in (live, foreign, young, old):
        d.mkdir()
    day_ago = time.time() - 2 * 24 * 3600
    os.utime(old, (day_ago, day_ago))
    notes = "\n".join(sweep_stale(tmp_path))
    assert live.exists() and "still running" in notes
    assert foreign.exists() and "another host" in notes
    assert young.exists() and "unknown owner" in notes
    assert not old.exists() and "swept stale temporary .r4" in notes


def test_atomic_dir_removes_the_temporary_directory_on_error(tmp_path):
    with pytest.raises(RuntimeError), atomic_dir(tmp_path / "run") as tmp:
        (tmp / "a").write_text("partial")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_passing_gate_stays_0_when_its_outputs_cannot_be_written(tmp_path, capsys, monkeypatch):
    import errno

    from ecobench.io import rundir

    run = tmp_path / "r"
    assert main(["run", LAYOUTLM, "-q", "--out", str(run)]) == 0

    def full(path, data):  # a full disk (a missing folder is made since trial17, so no longer this case)
        raise rundir._output_error(path, OSError(errno.ENOSPC, "No space left on device"))

    monkeypatch.setattr(rundir, "write_bytes_atomic", full)
    missing = tmp_path / "no" / "such" / "dir"
    code = main(["check", str(run), "--baseline", str(run), "--junit", str(missing / "j.xml"),
                 "--markdown", str(missing / "v.md")])
    captured = capsys.readouterr()
    assert code == 0 and "no regression" in captured.out
    assert "cannot write" in captured.err and "the verdict stands" in captured.err


def test_a_failed_run_removes_only_the_folders_it_made_and_a_racing_run_remakes_its_own(tmp_path,
                                                                                      monkeypatch):
    """A failure removes the folders the run made, while empty; another run that made the same folder a
    moment before and lost it to that removal makes it again rather than failing with exit 4."""
    kept = tmp_path / "kept"
    kept.mkdir()
    with pytest.raises(RuntimeError), atomic_dir(kept / "a" / "b" / "run", notice=lambda _: None) as tmp:
        (tmp / "x").write_text("partial")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == [kept] and list(kept.iterdir()) == []

    real_mkdir, calls = os.mkdir, []

    def racing_mkdir(path, *args, **kwargs):
        if ".tmp-" in os.fspath(path):
            calls.append(path)
        if len(calls) == 1 and ".tmp-" in os.fspath(path):  # another run's clean-up removed the folder
            os.rmdir(os.path.dirname(path))
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", racing_mkdir)
    with atomic_dir(kept / "c" / "run", notice=lambda _: None) as tmp:
        (tmp / "x").write_text("whole")
    monkeypatch.undo()
    assert (kept / "c" / "run" / "x").read_text() == "whole" and len(calls) == 2


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc, where no folder can be made")
def test_an_out_that_cannot_be_created_is_refused_naming_it_before_the_work(capsys):
    """new-user try: `run S --out /proc/x` evaluated the whole scenario, then exited 4 with '/proc: cannot
    write: ...', which did not name --out."""
    assert main(["run", LAYOUTLM, "--out", "/proc/x/run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ecobench: error: --out /proc/x/run: cannot be created: /proc/x: ")
    assert "[1/" not in err and "wrote" not in err and err.count("\n") == 1  # nothing evaluated
    assert not os.path.exists("/proc/x")


def test_a_folder_that_cannot_take_a_run_leaves_nothing_behind(tmp_path, monkeypatch):
    """The folders probe_folder made to try --out's place are removed again, whatever failed."""
    real = os.mkdir

    def mkdir(path, *args, **kwargs):
        if os.path.basename(path).startswith(".probe.tmp-"):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    with pytest.raises(InputError, match=r"^--out X: cannot be created: .*new/sub: Read-only file system "
                                         r"\(read-only file system\); allowed: "):
        probe_folder(tmp_path / "new" / "sub", "--out X")
    assert list(tmp_path.iterdir()) == []
