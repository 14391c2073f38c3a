"""Discovery files on every platform: no signals, no reused pids, no crash on a bad file.

These run without a kernel: the discovery folder is a temporary one, and the live server is
this test process (its own pid and start time), as a kernel's would be.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import pathlib
import stat
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import psutil  # imported before any test patches sys.platform: it picks its backend then
import pytest
from jupyter_core import paths

from mcp_notebook import discovery, ownerfolder


def self_started() -> float:
    """This process's start time by the wall clock, read now: Linux derives it from the
    boot time, which moves when the clock is stepped (NTP), so a reading from the
    module's import may be seconds off by the time a test compares it."""
    started: float = psutil.Process().create_time()
    return started


@pytest.fixture(autouse=True)
def runtime(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("MCP_NOTEBOOK_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "mcp_notebook").mkdir()
    return tmp_path / "mcp_notebook"


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def write(folder: Path, stem: str, **fields) -> Path:
    """A discovery file as another process would have written it (UTF-8 JSON); without a
    ``created`` start time unless given, as files written before it was recorded."""
    record = {
        "name": stem,
        "url": f"http://127.0.0.1:9/{stem}",
        "token": None,
        "pid": os.getpid(),
        "started": time.time(),
        **fields,
    }
    path = folder / f"{stem}.json"
    path.write_bytes(json.dumps(record, ensure_ascii=False).encode("utf-8"))
    return path


def names() -> list[str]:
    return sorted(r.name for r in discovery.running())


def test_liveness_sends_no_signal_and_dead_servers_are_pruned(runtime, monkeypatch):
    """On Windows os.kill(pid, 0) sends CTRL_C_EVENT, or raises OSError without a console."""
    live = write(runtime, "live")
    dead = write(runtime, "dead", pid=dead_pid())
    signals = []

    def kill(pid: int, sig: int) -> None:
        signals.append((pid, sig))
        raise OSError(errno.EINVAL, "[WinError 87] The parameter is incorrect")

    monkeypatch.setattr(os, "kill", kill)
    monkeypatch.setattr(sys, "platform", "win32")
    assert names() == ["live"]
    assert discovery.find(None).name == "live"
    assert signals == []
    assert live.exists()
    assert not dead.exists()


def test_a_reused_pid_is_another_process(runtime):
    """The pid runs, but its process started an hour after the one that wrote the file."""
    write(runtime, "live")  # no start time recorded: judged by its pid alone
    started = self_started()
    reused = write(runtime, "reused", created=started - 3600)
    write(runtime, "same", created=started)  # the same process: alive
    listed = names()
    assert not reused.exists()
    assert listed == ["live", "same"]


def test_a_stepped_wall_clock_does_not_prune_a_live_server(runtime, monkeypatch):
    """On Linux psutil derives start times from the boot time, which moves when the wall
    clock is stepped (a laptop resuming, NTP, WSL2): the server must still be found."""
    discovery.register("mine", "http://127.0.0.1:9/mcp", "t")
    assert names() == ["mine"]
    real = psutil.Process.create_time
    monkeypatch.setattr(psutil.Process, "create_time", lambda self: real(self) + 7200)
    if sys.platform.startswith("linux"):
        assert names() == ["mine"]
    else:  # there the kernel keeps the start time itself: it does not move
        pytest.skip("only Linux derives start times from a boot time that moves")


def test_a_reused_pid_is_told_by_its_boot_ticks(runtime):
    """Linux: a process that started at another tick since boot is another process, even
    when the wall-clock start times agree."""
    ticks = discovery._boot_ticks(os.getpid())
    if ticks is None:
        pytest.skip("no /proc: start times are compared instead (test above)")
    reused = write(runtime, "reused", created=self_started(), boot_ticks=ticks + 100)
    write(runtime, "same", created=self_started(), boot_ticks=ticks)
    assert names() == ["same"]
    assert not reused.exists()


def test_numbers_out_of_range_are_not_a_server_record(runtime, caplog):
    write(runtime, "live")
    write(runtime, "huge-started", started=10**400)
    write(runtime, "huge-created", created=10**400)
    write(runtime, "huge-pid", pid=2**64)
    write(runtime, "odd-ticks", boot_ticks=1.5)
    assert names() == ["live"]
    assert caplog.text.count("not a server record") == 4


def test_locked_and_unreadable_files_are_skipped_with_a_warning(runtime, monkeypatch, caplog):
    """Windows: another process holds a file (PermissionError on reading or deleting it)."""
    write(runtime, "live")
    locked = write(runtime, "locked")  # cannot be read now
    busy = write(runtime, "stale-busy", pid=dead_pid())  # stale, cannot be deleted now
    (runtime / "half.json").write_bytes(b'{"name": "half", "url": "http://127.0.0.1:9/')
    (runtime / "list.json").write_bytes(b"[1, 2]")
    (runtime / "bad-pid.json").write_bytes(b'{"name": "x", "url": "u", "pid": "12"}')
    (runtime / "latin1.json").write_bytes('{"name": "caf\xe9"}'.encode("latin-1"))
    (runtime / "folder.json").mkdir()
    refused = {"unlink": busy}
    caplog.set_level(logging.WARNING, logger="mcp_notebook.discovery")
    with pytest.MonkeyPatch.context() as held:
        for method, victim in refused.items():
            original = getattr(pathlib.Path, method)

            def guarded(self, *args, _original=original, _victim=victim, **kwargs):
                if self == _victim:
                    raise PermissionError(errno.EACCES, "The file is being used by another process")
                return _original(self, *args, **kwargs)

            held.setattr(pathlib.Path, method, guarded)
        read_own = ownerfolder.read_own

        def reading(path):
            if path == locked:
                raise PermissionError(errno.EACCES, "The file is being used by another process")
            return read_own(path)

        held.setattr(ownerfolder, "read_own", reading)
        assert names() == ["live"]
        assert discovery.find("live").name == "live"
        discovery.unregister(busy)  # what a stopping server does
    for name in ("locked", "stale-busy", "half", "list", "bad-pid", "latin1", "folder"):
        assert f"{name}.json" in caplog.text, name
    assert locked.exists() and busy.exists()
    # The other process lets go: the stale file goes at the next listing.
    assert names() == ["live", "locked"]
    assert not busy.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="Windows: Jupyter's secure_write, below")
def test_files_are_written_owner_only_through_a_fresh_temporary_file(runtime, monkeypatch):
    """0600 (it holds the token), created with O_EXCL | O_NOFOLLOW under a random name."""
    opened: list[tuple[str, int]] = []
    original = os.open

    def spy(path, flags, *args, **kwargs):
        opened.append((os.fsdecode(path), flags))
        return original(path, flags, *args, **kwargs)

    with pytest.MonkeyPatch.context() as spying:
        spying.setattr(os, "open", spy)
        path = discovery.register("secret", "http://127.0.0.1:9/mcp", "the-token")
    [(temporary, flags)] = [(p, f) for p, f in opened if p.endswith(".tmp")]
    assert flags & os.O_EXCL and flags & os.O_NOFOLLOW and flags & os.O_CREAT
    assert temporary.startswith(".secret-") and len(temporary) > len(".secret-0.tmp") + 8
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not list(runtime.glob("*.tmp")) and not list(runtime.glob(".*.tmp"))
    record = discovery.find("secret")
    assert (record.token, record.pid, record.created) == ("the-token", os.getpid(), self_started())
    discovery.unregister(path)
    assert not path.exists()


def test_on_windows_files_are_written_with_jupyters_secure_write(runtime, monkeypatch):
    """secure_write gives an owner-only ACL on Windows, where mode bits do not protect."""
    written = []
    original = paths.secure_write

    def spy(fname, binary=False):
        written.append(fname)
        return original(fname, binary=binary)

    monkeypatch.setattr(paths, "secure_write", spy)
    with pytest.MonkeyPatch.context() as windows:
        windows.setattr(sys, "platform", "win32")
        path = discovery.register("secret", "http://127.0.0.1:9/mcp", "the-token")
    assert written == [str(path.with_suffix(".tmp"))]
    assert discovery.find("secret").token == "the-token"
    discovery.unregister(path)


def test_a_file_the_system_cannot_make_private_is_an_oserror(runtime, monkeypatch):
    """secure_write raises RuntimeError there; %mcp start logs OSErrors and keeps serving."""
    monkeypatch.setattr(paths, "get_file_mode", lambda fname: 0o644)
    with pytest.raises(OSError, match="Permissions assignment failed"):
        discovery.register("public", "http://127.0.0.1:9/mcp", "the-token")
    assert list(runtime.iterdir()) == []


def test_replacing_a_file_a_reader_holds_waits_for_it(runtime, monkeypatch):
    """Windows refuses os.replace over a file another process has open, for that moment."""
    original, refused = os.replace, []

    def replace(source, target, **folders):
        if not refused:
            refused.append(os.path.basename(target))
            raise PermissionError(errno.EACCES, "Access is denied")
        return original(source, target, **folders)

    monkeypatch.setattr(os, "replace", replace)
    path = discovery.register("busy", "http://127.0.0.1:9/mcp", None)
    assert refused == [path.name]
    assert names() == ["busy"]

    def never(source, target, **folders):
        raise PermissionError(errno.EACCES, "Access is denied")

    monkeypatch.setattr(os, "replace", never)  # held for good: an error, and no stray token
    with pytest.raises(PermissionError):
        discovery.register("held", "http://127.0.0.1:9/mcp", "the-token")
    assert sorted(p.name for p in runtime.iterdir()) == [path.name]


NAME, NOTEBOOK = "Café 数据", "/home/zoë/分析.ipynb"
FOREIGN, FOREIGN_NOTEBOOK = "Ünïcode", "C:\\Users\\José\\ノート.ipynb"
# ASCII source (the command line of an ASCII locale cannot carry more); UTF-8 files.
UTF8_SCRIPT = f"""
import json, locale, os, sys
from mcp_notebook import discovery, ownerfolder
encoding = locale.getpreferredencoding(False).lower()
assert encoding in ("ascii", "ansi_x3.4-1968"), encoding
discovery.register({NAME!a}, "http://127.0.0.1:9/a", None, notebook={NOTEBOOK!a})
foreign = {{"name": {FOREIGN!a}, "url": "http://127.0.0.1:9/b", "token": None,
           "pid": os.getpid(), "notebook": {FOREIGN_NOTEBOOK!a}, "started": 0}}
with open(discovery.folder() / "foreign.json", "wb") as handle:
    handle.write(json.dumps(foreign, ensure_ascii=False).encode("utf-8"))
found = sorted([r.name, r.notebook] for r in discovery.running())
sys.stdout.write(json.dumps(found))
"""


def test_non_ascii_names_round_trip_whatever_the_locale(runtime):
    """A kernel or bridge in an ASCII locale (Windows' would be cp1252) reads UTF-8 files."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("LC_", "PYTHONIOENCODING", "PYTHONUTF8"))
    }
    env.update(LANG="C", LC_ALL="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    result = subprocess.run(
        [sys.executable, "-c", UTF8_SCRIPT], capture_output=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr.decode()
    assert json.loads(result.stdout) == [[NAME, NOTEBOOK], [FOREIGN, FOREIGN_NOTEBOOK]]


def test_a_name_is_found_whatever_its_unicode_normalization(runtime):
    # `serve Café.ipynb` on macOS: the file system gives the name decomposed (NFD), so the
    # server is "Cafe\u0301"; the client's config names it as typed, composed (NFC).
    decomposed = unicodedata.normalize("NFD", "Café")
    discovery.register(decomposed, "http://127.0.0.1:9/mcp", None)
    assert discovery.find("Café").name == decomposed
    assert discovery.find(decomposed).name == decomposed
    with pytest.raises(discovery.NotFound):
        discovery.find("Cafe")


def test_a_notebook_whose_file_name_is_not_utf8_is_discovered(runtime):
    """A notebook saved under a name that isn't UTF-8 (``caf\\xe9.ipynb`` from a Latin-1
    system) reaches Python with a lone surrogate in its path: the discovery file could not
    be encoded, so ``%mcp start`` failed and the bridge could not find the server."""
    name = "caf\udce9"
    path = discovery.register(name, "http://127.0.0.1:9/mcp", None, notebook=f"/n/{name}.ipynb")
    assert path.is_file()
    (record,) = discovery.running()
    assert (record.name, record.notebook) == (name, f"/n/{name}.ipynb")
    assert discovery.find(name).url == "http://127.0.0.1:9/mcp"
