"""Discovery files in a real kernel: written on start, removed on stop/shutdown/restart, listed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest
from jupyter_client.manager import KernelManager

from mcp_notebook import discovery
from tests.kernels import Kernel
from tests.sources import ADD_BARE

NOTEBOOK = "/some/dir/sales_report.ipynb"


class NotebookKernel(Kernel):
    """A kernel started the way Jupyter Server starts one: ``kernel-<id>.json``, extra env."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        kernel_id = str(uuid.uuid4())
        runtime = Path(os.environ["JUPYTER_RUNTIME_DIR"])
        self.manager = KernelManager(
            kernel_name="python3", connection_file=str(runtime / f"kernel-{kernel_id}.json")
        )
        self.manager.start_kernel(kernel_id=kernel_id, env={**os.environ, **(env or {})})
        self.client = self.manager.client()
        self.client.start_channels()
        try:
            self.client.wait_for_ready(timeout=60)
        except RuntimeError:
            self.shutdown()
            raise

    def shutdown_cleanly(self) -> None:
        """What Jupyter does on "Shut down kernel": ask, and let the kernel exit by itself."""
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=False)

    def close(self) -> None:
        if self.manager.has_kernel:
            self.shutdown()
        else:
            self.client.stop_channels()


def folder() -> Path:
    return Path(os.environ["JUPYTER_RUNTIME_DIR"]) / "mcp_notebook"


def files_of(pid: int) -> dict[Path, dict[str, Any]]:
    """The discovery files naming process ``pid``, read back."""
    found = {}
    for path in folder().glob("*.json"):
        data = json.loads(path.read_bytes().decode("utf-8"))
        if data.get("pid") == pid:
            found[path] = data
    return found


def only_file_of(pid: int) -> tuple[Path, dict[str, Any]]:
    found = files_of(pid)
    assert len(found) == 1, f"expected one discovery file for pid {pid}: {found}"
    return next(iter(found.items()))


def kernel_pid(kernel: Kernel) -> int:
    return kernel.eval("__import__('os').getpid()")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_notebook", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env if env is not None else dict(os.environ),
    )


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.fixture(scope="module")
def loaded(kernel):
    kernel.run("%load_ext mcp_notebook")
    kernel.run(ADD_BARE)
    yield kernel
    kernel.run("%mcp stop")


@pytest.fixture
def sales(loaded):
    """The module kernel serving as "sales"."""
    loaded.run("%mcp start --port 0 --name sales")
    yield loaded
    loaded.run("%mcp stop")


@pytest.fixture
def notebook_kernels():
    started: list[NotebookKernel] = []

    def start(env: dict[str, str] | None = None) -> NotebookKernel:
        started.append(NotebookKernel(env))
        return started[-1]

    yield start
    for kernel in started:
        kernel.close()


def test_start_writes_an_owner_only_file_describing_the_server(loaded):
    pid = kernel_pid(loaded)
    assert files_of(pid) == {}
    before = time.time()
    loaded.run("%mcp start --port 0 --name sales")
    after = time.time()
    try:
        path, data = only_file_of(pid)
        assert path.parent == folder()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds the token
        assert stat.S_IMODE(folder().stat().st_mode) & 0o077 == 0
        assert not list(folder().glob("*.tmp"))
        # This kernel's connection file has a temporary name, which is no kernel id.
        connection_name = Path(loaded.manager.connection_file).stem
        connection = (
            connection_name.removeprefix("kernel-")
            if connection_name.startswith("kernel-")
            else None
        )
        assert data == {
            "name": "sales",
            "url": loaded.eval("mcp.url"),
            "token": loaded.eval("mcp.token"),
            "pid": pid,
            "kernel_id": connection,
            "notebook": None,
            "started": data["started"],
            "created": psutil.Process(pid).create_time(),  # tells a reused pid apart
            # ... and on Linux, its start in ticks since boot, which no clock step moves
            "boot_ticks": discovery._boot_ticks(pid),
            # the Jupyter Server extension's proof that it relayed a request
            "relay_key": loaded.eval("mcp._relay_key"),
            # what the relay bounds request bodies with, and keeps idle connections under
            "max_body": loaded.eval("mcp._transport.max_body"),
            "idle_timeout": loaded.eval("mcp.limits.idle_timeout"),
        }
        assert isinstance(data["token"], str) and data["token"]
        assert before - 1 <= data["started"] <= after + 1
    finally:
        loaded.run("%mcp stop")


def test_stop_removes_the_file_and_starting_again_writes_it(loaded):
    pid = kernel_pid(loaded)
    loaded.run("%mcp start --port 0 --name sales")
    first, _ = only_file_of(pid)
    loaded.run("%mcp stop")
    assert not first.exists()
    assert files_of(pid) == {}
    loaded.run("%mcp start --port 0 --name sales")
    try:
        _, data = only_file_of(pid)
        assert data["url"] == loaded.eval("mcp.url")
        assert data["token"] == loaded.eval("mcp.token")
        # A start while running replaces the file rather than leaving two behind.
        loaded.run("%mcp start --port 0 --name sales")
        _, data = only_file_of(pid)
        assert data["url"] == loaded.eval("mcp.url")
    finally:
        loaded.run("%mcp stop")
    assert files_of(pid) == {}


def test_a_clean_kernel_shutdown_removes_the_file(notebook_kernels):
    kernel = notebook_kernels()
    kernel.run("%load_ext mcp_notebook")
    kernel.run("%mcp start --port 0 --name closing")
    pid = kernel_pid(kernel)
    path, data = only_file_of(pid)
    assert data["kernel_id"] == kernel.manager.kernel_id
    kernel.shutdown_cleanly()
    assert not kernel.manager.has_kernel
    assert not path.exists()


def test_a_kernel_restart_removes_the_old_file(notebook_kernels):
    kernel = notebook_kernels()
    kernel.run("%load_ext mcp_notebook")
    kernel.run("%mcp start --port 0 --name restarting")
    old_pid = kernel_pid(kernel)
    old, _ = only_file_of(old_pid)
    kernel.manager.restart_kernel(now=False)
    kernel.client.wait_for_ready(timeout=60)
    assert not old.exists()
    new_pid = kernel_pid(kernel)
    assert new_pid != old_pid
    assert files_of(new_pid) == {}  # nothing serves until the notebook starts it again
    kernel.run("%load_ext mcp_notebook")
    kernel.run("%mcp start --port 0 --name restarting")
    _, data = only_file_of(new_pid)
    assert data["name"] == "restarting"
    assert data["kernel_id"] == kernel.manager.kernel_id  # same kernel, new process


def test_the_default_name_is_the_notebooks(notebook_kernels):
    kernel = notebook_kernels({"JPY_SESSION_NAME": NOTEBOOK})
    kernel.run("%load_ext mcp_notebook")
    assert kernel.eval("mcp.name") == "sales_report"
    assert kernel.eval("mcp.notebook_path") == NOTEBOOK
    _, output = kernel.run("%mcp start --port 0")
    assert "'sales_report'" in output
    pid = kernel_pid(kernel)
    default, data = only_file_of(pid)
    assert data["name"] == "sales_report"
    assert data["notebook"] == NOTEBOOK
    assert data["kernel_id"] == kernel.manager.kernel_id

    kernel.run("%mcp start --port 0 --name x")
    assert kernel.eval("mcp.name") == "x"
    assert not default.exists()
    _, data = only_file_of(pid)
    assert data["name"] == "x"
    assert data["notebook"] == NOTEBOOK
    assert data["url"] == kernel.eval("mcp.url")


def test_list_shows_the_running_server(sales):
    url = sales.eval("mcp.url")
    pid = kernel_pid(sales)
    result = cli("list")
    assert result.returncode == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    ours = [row for row in rows if row[:2] == ["sales", url]]
    assert len(ours) == 1, result.stdout
    assert f"pid {pid}" in ours[0]
    assert "No notebook servers are running" not in result.stdout


def test_list_skips_and_deletes_a_stale_file(sales):
    pid = dead_pid()
    stale = folder() / f"stale-{pid}.json"
    record = {
        "name": "stale-notebook",
        "url": "http://127.0.0.1:9/mcp",
        "token": "old-token",
        "pid": pid,
        "kernel_id": None,
        "notebook": None,
        "started": time.time(),
    }
    stale.write_text(json.dumps(record))
    result = cli("list")
    assert result.returncode == 0, result.stderr
    assert "stale-notebook" not in result.stdout
    assert "http://127.0.0.1:9/mcp" not in result.stdout
    assert not stale.exists()
    assert sales.eval("mcp.url") in result.stdout  # the live one is still listed


def test_list_with_nothing_running(tmp_path):
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path)}
    env.pop("MCP_NOTEBOOK_RUNTIME_DIR", None)
    result = cli("list", env=env)
    assert result.returncode == 0, result.stderr
    assert "No notebook servers are running" in result.stdout

    # Only stale files left: still nothing running, and they are gone afterwards.
    (tmp_path / "mcp_notebook").mkdir()
    stale = tmp_path / "mcp_notebook" / "gone.json"
    record = {"name": "gone", "url": "http://127.0.0.1:9/mcp", "token": None, "pid": dead_pid()}
    stale.write_text(json.dumps(record))
    result = cli("list", env=env)
    assert result.returncode == 0, result.stderr
    assert "No notebook servers are running" in result.stdout
    assert "gone" not in result.stdout
    assert not stale.exists()


def test_a_stopped_server_is_no_longer_listed(loaded):
    loaded.run("%mcp start --port 0 --name sales")
    url = loaded.eval("mcp.url")
    assert url in cli("list").stdout
    loaded.run("%mcp stop")
    assert url not in cli("list").stdout
