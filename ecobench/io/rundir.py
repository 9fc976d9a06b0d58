"""Run directories and files written atomically, with ordinary permissions, and nothing left behind.

A run directory is filled under a hidden temporary name, ``.<run-id>.tmp-<host>-<pid>-<random>``,
and renamed into place when complete. Any exception, Ctrl-C or SIGTERM removes it (see
``ecobench.process``). SIGKILL or a power cut cannot be caught: the next run in the same folder
sweeps temporary directories whose process is gone (same host, pid no longer running) and reports
the ones it cannot attribute. A disk that is read-only or full gives :class:`OutputError`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import socket
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from ecobench.errors import InputError, OutputError
from ecobench.io.textsafe import terminal
from ecobench.process import deferred_signals, note_output

__all__ = ["append_text", "atomic_dir", "check_folder", "make_folder", "new_run_id", "probe_folder",
           "refuse_clashes", "refuse_existing", "results_file", "sweep_stale", "target_dir", "write_new",
           "write_text_atomic"]

# Temporary directories of the old format (tempfile.mkdtemp, no owner in the name) are swept once
# they are this old: no ecobench run takes a day to write its files.
UNOWNED_STALE_S = 24 * 3600.0
_OURS = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-[0-9a-f]{6}$")
_OLD = re.compile(r"^\.(?P<name>.+)\.tmp-[a-z0-9_]{8}$")


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _tmp_name(name: str) -> str:
    return f".{name}.tmp-{_host_tag()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def not_a_run(path: Path) -> InputError:
    """Why ``path`` (a run directory or a baseline file, as given) holds no results.json: a folder of
    runs (``results/<scenario>/``; its newest named), a folder that is not a run, or nothing there."""
    runs: list[str] = []
    with contextlib.suppress(OSError):
        if path.is_dir():
            runs = sorted(d.name for d in path.iterdir() if (d / "results.json").is_file())
    if len(runs) == 1:
        return InputError(f"{path}: a folder holding 1 run, not a run: give that run ({path / runs[0]})")
    if runs:
        return InputError(f"{path}: a folder of {len(runs)} runs, not a run: give one of them "
                          f"(newest: {path / runs[-1]})")
    if path.is_dir():
        return InputError(f"{path}: a folder without results.json, not a run directory (give a directory "
                          "`ecobench run` wrote, or its results.json)")
    return InputError(f"{path}: no such run directory or baseline file")


def results_file(path: Path) -> Path:
    """The results.json a run directory or a baseline file given as ``path`` is read from; bad input
    where there is none, and where a run's other files or a scenario is given (said as such, not as
    'not a valid JSON file (Expecting value: line 1 column 1 (char 0))')."""
    f = path / "results.json" if path.is_dir() else path
    if not f.exists():
        raise not_a_run(path)
    suffix = f.suffix.lower()
    if suffix in (".yaml", ".yml"):
        raise InputError(f"{f}: a YAML file (a scenario?), not a run's results; allowed: a run directory "
                         "`ecobench run` wrote, its results.json, or a baseline file")
    if suffix in (".csv", ".parquet", ".html"):
        raise InputError(f"{f}: a run's {f.name}, not its results; allowed: the run directory "
                         f"({f.parent}) or its results.json, or a baseline file")
    return f


def _output_error(path: Path, exc: OSError) -> OutputError:
    reason = exc.strerror or str(exc)
    hint = {errno.ENOSPC: " (disk full)", errno.EROFS: " (read-only file system)",
            errno.EDQUOT: " (disk quota exceeded)", errno.EFBIG: " (file too large for this system)",
            errno.EACCES: " (no permission)",
            errno.EEXIST: " (a file of that name is in the way: a folder is needed there)",
            errno.ENOTDIR: " (a file in the path is in the way: a folder is needed there)",
            }.get(exc.errno or 0, "")
    return OutputError(f"{path}: cannot write: {reason}{hint}")


def check_folder(folder: Path, given: str) -> None:
    """``folder`` must be a folder or creatable as one: a file there or above it is bad input
    (exit 2), named in one line after ``given`` (the flag and path the user gave)."""
    for up in (folder, *folder.parents):
        if up.is_dir():
            return
        if up.exists() or up.is_symlink():
            what = "a file" if up.exists() else "a broken link"
            raise InputError(f"{given}: {up} is {what}, not a folder")


def probe_folder(folder: Path, given: str) -> None:
    """Bad input (exit 2), said before the work: ``folder`` cannot be made (with those above it) or
    cannot take a new folder, tried by making them and a temporary folder in it and removing them again
    (nothing is left behind); named in one line after ``given`` (the flag and path the user gave)."""
    made = _missing_folders(folder)
    probe = folder / _tmp_name("probe")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        # the folder, not the probe
        where = folder if exc.filename in (None, str(probe)) else Path(exc.filename)
        why = str(_output_error(where, exc)).replace(": cannot write: ", ": ", 1)
        raise InputError(f"{given}: cannot be created: {why}; allowed: a new directory in a folder this "
                         "user can write") from None
    finally:
        _remove_empty(made)


def make_folder(folder: Path, given: str) -> None:
    """Create ``folder`` and those above it (:func:`check_folder` first); other failures are
    :class:`OutputError`."""
    check_folder(folder, given)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _output_error(folder, exc) from None


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write a file via a temporary sibling and rename, so readers never see half of it; the
    temporary file is removed on any failure; the file gets the usual permissions (umask)."""
    tmp = path.with_name(_tmp_name(path.name))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException as exc:
        with deferred_signals(), contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise _output_error(path, exc) from None
        raise


def write_text_atomic(path: Path, text: str) -> None:
    """:func:`write_bytes_atomic` of ``text`` in UTF-8 (a user's output: a message after a signal
    names it if it was written)."""
    data = text.encode("utf-8")
    note_output(path)
    write_bytes_atomic(path, data)


RUN_MARKERS = ("results.json", "emulation.json")  # a folder holding one is a run directory


def _run_holding(path: Path) -> Path | None:
    """The run directory (``ecobench run`` or ``emulate`` wrote it) that ``path`` is a file of."""
    folder = path.parent
    return folder if any((folder / m).is_file() for m in RUN_MARKERS) else None


def refuse_existing(path: Path, flag: str, force: bool) -> None:
    """Never overwrite an earlier result: an existing ``path`` (a dangling link too) given with
    ``flag`` is bad input unless ``force``; a folder always is (no file can replace it), as is a file
    where a folder above it should be (:func:`check_folder`: said before the work, not after it), and
    an existing file of a run directory, even with ``force`` (a run is never overwritten, as
    :func:`target_dir` never writes over one)."""
    if path.is_dir() and not path.is_symlink():
        raise InputError(f"{flag} {path}: is a folder; allowed: a file name (such as {path / 'NAME'})")
    if (path.exists() or path.is_symlink()) and (run := _run_holding(path)) is not None:
        raise InputError(f"{flag} {path}: is a file of the run directory {run}, and runs are never "
                         "overwritten (not even with --force); allowed: a new file outside it")
    if not force and (path.exists() or path.is_symlink()):
        raise InputError(f"{flag} {path}: already exists; not overwritten (pass --force to replace it)")
    check_folder(path.parent, f"{flag} {path}")


def refuse_clashes(outputs: Sequence[tuple[str, Path]], inputs: Sequence[tuple[str, Path]] = ()) -> None:
    """Bad input, said before the work, even with --force: two outputs (``(flag, path)``) naming one
    file (the second would replace the first) or an output naming a file the command reads
    (``(what, path)``; a run directory stands for its results.json), which it would replace."""
    read = {os.path.realpath(p / "results.json" if p.is_dir() else p): what for what, p in inputs}
    named: dict[str, str] = {}
    for flag, path in outputs:
        key = os.path.realpath(path)
        if key in read:
            raise InputError(f"{flag} {path}: is {read[key]}, which this command reads; allowed: a "
                             "file this command does not read")
        if key in named:
            raise InputError(f"{flag} {path}: the same file as {named[key]}; allowed: a different file "
                             "for each output")
        named[key] = flag


def write_new(path: Path, text: str, flag: str, force: bool) -> None:
    """:func:`write_text_atomic` of a file the user named with ``flag``, its folder made if need be (as
    ``run --out`` makes its own); an existing file is bad input unless ``force`` (:func:`refuse_existing`)."""
    refuse_existing(path, flag, force)
    make_folder(path.parent, f"{flag} {path}")
    write_text_atomic(path, text)


def append_text(path: Path, text: str) -> None:
    """Append ``text`` in one write (e.g. to GitHub's step summary); OSError as OutputError."""
    note_output(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            data = text.encode("utf-8")
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)
    except OSError as exc:
        raise _output_error(path, exc) from None


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus a short random suffix."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:6]


def target_dir(results_root: Path, scenario_name: str, out: Path | None) -> Path:
    """Where a run goes: exactly ``out`` (must not exist), else results/<scenario>/<run-id>/,
    which must stay inside the results root."""
    if out is not None:
        if out.exists() or out.is_symlink():
            raise InputError(f"--out {out}: already exists; runs never overwrite an earlier run (name a new "
                             f"directory, or omit --out to write {results_root}/{scenario_name}/<run-id>/)")
        check_folder(out.parent, f"--out {out}")
        probe_folder(out.parent, f"--out {out}")
        return out
    check_folder(results_root, f"--results {results_root}")
    final = results_root / scenario_name / new_run_id()
    from ecobench.io.bounded import resolve_path

    inside = resolve_path(final, "--results").is_relative_to(resolve_path(results_root, "--results"))
    if not inside or scenario_name in ("", ".", ".."):
        raise InputError(f"name {scenario_name!r}: the run would be written outside {results_root}")
    return final


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def sweep_stale(folder: Path) -> list[str]:
    """Remove temporary run directories and files in ``folder`` left by processes that are gone;
    return one line per directory swept or left alone (and why)."""
    notes: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return notes
    me = _host_tag()
    for e in entries:
        ours, old = _OURS.match(e.name), _OLD.match(e.name)
        if not (ours or old):
            continue
        path = Path(e.path)
        if ours:
            pid = int(ours["pid"])
            if ours["host"] != me:
                notes.append(f"left {path}: written by pid {pid} on another host")
                continue
            if _pid_running(pid):
                if pid != os.getpid():
                    notes.append(f"left {path}: pid {pid}, which wrote it, is still running")
                continue
            why = f"pid {pid}, which wrote it, is no longer running"
        else:
            try:
                age_s = time.time() - e.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue
            if age_s < UNOWNED_STALE_S:
                notes.append(f"left {path}: unfinished temporary run directory of unknown owner, "
                             f"{age_s / 60:.0f} min old (swept after {UNOWNED_STALE_S / 3600:.0f} h)")
                continue
            why = f"{age_s / 3600:.0f} h old"
        try:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError as exc:
            notes.append(f"could not remove stale {path} ({exc.strerror or exc})")
            continue
        notes.append(f"swept stale temporary {path.name} ({why})")
    return notes


def _to_stderr(note: str) -> None:
    print(f"ecobench: {terminal(note)}", file=sys.stderr, flush=True)


def _missing_folders(folder: Path) -> list[Path]:
    """``folder`` and those above it that do not exist yet, deepest first."""
    missing = []
    for up in (folder, *folder.parents):
        if up.exists() or up.is_symlink():
            break
        missing.append(up)
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (deepest first) while each is empty: an interrupted first run into a new
    ``--results`` root leaves no empty ``results/<scenario>/`` behind; one another process has
    written into meanwhile is kept."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


@contextlib.contextmanager
def atomic_dir(final: Path, notice: Callable[[str], None] = _to_stderr) -> Iterator[Path]:
    """Yield a temporary sibling of ``final`` to fill; rename it to ``final`` on success, remove it
    on any failure or interrupt (KeyboardInterrupt and SIGTERM included). Stale temporary
    directories beside it are swept first, each reported to ``notice``."""
    made = _missing_folders(final.parent)  # made here: removed again, if still empty, on failure
    make_folder(final.parent, str(final))
    for note in sweep_stale(final.parent):
        notice(note)
    tmp = final.parent / _tmp_name(final.name)
    try:
        try:
            os.mkdir(tmp, 0o777)  # ordinary permissions (umask), not mkdtemp's 0700
        except FileNotFoundError:  # another run's failure removed the folder, empty, just now: again
            make_folder(final.parent, str(final))
            os.mkdir(tmp, 0o777)
    except OSError as exc:
        _remove_empty(made)
        raise _output_error(final.parent, exc) from None
    try:
        yield tmp
        if final.exists() or final.is_symlink():
            raise InputError(f"{final}: appeared while the run was being written; not overwritten")
        note_output(final, "run")
        os.rename(tmp, final)
    except BaseException as exc:
        with deferred_signals():  # a signal during the clean-up waits for it, then is honoured
            shutil.rmtree(tmp, ignore_errors=True)
            _remove_empty(made)
        if isinstance(exc, OSError):
            raise _output_error(final, exc) from None
        raise
