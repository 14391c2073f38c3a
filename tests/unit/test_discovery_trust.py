"""The discovery folder where another user could write: nothing planted there is trusted.

``MCP_NOTEBOOK_RUNTIME_DIR`` / ``JUPYTER_RUNTIME_DIR`` may point at a shared or
misconfigured folder. A file planted there must not make ``mcp-notebook bridge NAME``
connect to the planter's server (or ``list`` show it), a folder of another user is refused,
and writing the discovery file never follows a planted link onto a file of the user's.

Files of another user need root to plant (chown); the rest runs as any user. The bridge
and ``list`` run as the subprocesses a client and a person start.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mcp_notebook import discovery, ownerfolder
from tests.stdio import INITIALIZE, FakeNotebook

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX owners and modes")
NOBODY = 65534  # another user's uid
AS_ROOT = pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() != 0,
    reason="planting a file as another user takes root (chown)",
)


@pytest.fixture
def runtime(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("MCP_NOTEBOOK_RUNTIME_DIR", str(tmp_path))
    folder = tmp_path / "mcp_notebook"
    folder.mkdir(mode=0o700)
    return folder


@pytest.fixture
def planted_server():
    fake = FakeNotebook(lambda seen: (200, "application/json", b"{}"))
    yield fake
    fake.close()


def plant(path: Path, name: str, url: str) -> Path:
    """A record naming a live process (this one) and the planter's URL."""
    record = {"name": name, "url": url, "token": "t", "pid": os.getpid(), "started": time.time()}
    path.write_text(json.dumps(record))
    return path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    lines = [INITIALIZE, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    return subprocess.run(
        [sys.executable, "-m", "mcp_notebook", *args],
        input="".join(json.dumps(line) + "\n" for line in lines) if args[0] == "bridge" else "",
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )


@AS_ROOT
def test_a_file_planted_by_another_user_is_neither_listed_nor_bridged_to(runtime, planted_server):
    planted = plant(runtime / "shelf-1.json", "shelf", planted_server.url)
    os.chown(planted, NOBODY, NOBODY)
    listed = run("list")
    assert listed.returncode == 0 and "shelf" not in listed.stdout, listed.stdout
    bridged = run("bridge", "shelf")
    replies = [json.loads(line) for line in bridged.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2]
    assert all("no running notebook server named 'shelf'" in r["error"]["message"] for r in replies)
    assert planted_server.seen == []  # the planter's server heard nothing, got no token
    assert planted.exists()  # not ours to delete either


@AS_ROOT
def test_a_discovery_folder_of_another_user_is_refused(runtime, planted_server):
    plant(runtime / "shelf-1.json", "shelf", planted_server.url)
    for path in (runtime, *runtime.iterdir()):
        os.chown(path, NOBODY, NOBODY)
    listed = run("list")
    assert listed.returncode == 1
    assert "refusing the discovery folder" in listed.stderr and "uid 65534" in listed.stderr
    bridged = run("bridge", "shelf")
    assert "refusing the discovery folder" in bridged.stdout and planted_server.seen == []
    with pytest.raises(PermissionError, match="refusing the discovery folder"):
        discovery.register("mine", "http://127.0.0.1:9/mcp", "my-token")
    assert sorted(p.name for p in runtime.iterdir()) == ["shelf-1.json"]


def test_a_planted_link_is_not_followed_when_reading(runtime, tmp_path, planted_server):
    elsewhere = plant(tmp_path / "record.json", "shelf", planted_server.url)
    (runtime / "shelf-1.json").symlink_to(elsewhere)
    assert discovery.running() == []
    assert "shelf" not in run("list").stdout and planted_server.seen == []


def test_a_discovery_folder_that_is_a_link_is_refused(runtime, tmp_path):
    runtime.rmdir()
    elsewhere = tmp_path / "theirs"
    elsewhere.mkdir()
    runtime.symlink_to(elsewhere)
    with pytest.raises(PermissionError, match="symbolic link"):
        discovery.register("mine", "http://127.0.0.1:9/mcp", "my-token")
    assert list(elsewhere.iterdir()) == []
    assert "symbolic link" in run("list").stderr


def test_our_folder_that_others_may_write_to_is_made_owner_only(runtime, caplog):
    runtime.chmod(0o777)
    caplog.set_level(logging.WARNING, logger="mcp_notebook.ownerfolder")
    path = discovery.register("mine", "http://127.0.0.1:9/mcp", "my-token")
    assert stat.S_IMODE(runtime.stat().st_mode) == 0o700
    assert "made the discovery folder" in caplog.text and "0o777" in caplog.text
    assert discovery.find("mine").token == "my-token"
    discovery.unregister(path)


def test_a_link_planted_where_the_file_is_written_never_overwrites_a_file(runtime, tmp_path):
    """Someone who can write to the folder races links onto the names the writer uses:
    the temporary file's and the discovery file's own. The user's private file stays."""
    runtime.chmod(0o777)  # a misconfigured folder (registering makes it 0700 again)
    victim = tmp_path / "private.txt"
    victim.write_text("precious")
    victim.chmod(0o600)
    stem = f"shelf-{os.getpid()}"
    names = [runtime / f"{stem}.tmp", runtime / f"{stem}.json"]
    done = threading.Event()

    def planter() -> None:
        while not done.is_set():
            for name in names:
                with contextlib.suppress(OSError):  # there already, or just replaced
                    name.symlink_to(victim)

    thread = threading.Thread(target=planter, daemon=True)
    thread.start()
    try:
        for _ in range(300):
            discovery.register("shelf", "http://127.0.0.1:9/mcp", "my-token")
    finally:
        done.set()
        thread.join(10)
    assert victim.read_text() == "precious"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600


def test_a_planted_giant_file_is_not_read(runtime, caplog):
    (runtime / "huge.json").write_bytes(b" " * (ownerfolder.MAX_FILE + 1))
    caplog.set_level(logging.WARNING, logger="mcp_notebook.discovery")
    assert discovery.running() == []
    assert "larger than" in caplog.text
