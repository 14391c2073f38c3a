"""JupyterLab and Notebook 7 on loopback and Debian's Chromium, for end-to-end tests in a
real browser.

Chromium comes from apt when it is missing (CI runs as root; nothing is skipped), and
Playwright drives it through ``executable_path``: no browser download. The server runs with
all of its ``JUPYTER_*`` folders in a temporary directory and nothing that calls out. The
``lab`` fixture is JupyterLab; ``front_end`` is JupyterLab, then Notebook 7 (the same
server with the other front end), for the tests that must hold in both.

Linux only (Debian's chromium, apt-get): on macOS and Windows these tests skip and say so.
The confirmation flow they drive is also tested without a browser, on every platform, by
tests/kernel/test_confirmations.py.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import portable
from tests.conftest import Served
from tests.sources import notebook
from tests.waiting import until, wait_until

ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
# Headless, and off the network: every host name but loopback fails to resolve.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]


NEEDS = portable.CHROMIUM_NEEDS


@pytest.fixture(scope="session", autouse=True)
def _debian_chromium_host() -> None:
    portable.require_linux(NEEDS)


def _install_chromium() -> None:
    if CHROMIUM.exists():
        return
    if os.geteuid() != 0:
        raise RuntimeError("these tests need Debian's chromium: apt-get install -y chromium")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")


@pytest.fixture(scope="session")
def chromium() -> str:
    _install_chromium()
    assert CHROMIUM.exists()
    return str(CHROMIUM)


@dataclass
class Lab:
    """A Jupyter server on loopback, with the JupyterLab (``app="lab"``) or Notebook 7
    (``app="notebook"``) front end."""

    url: str
    token: str
    root: Path  # the folder it serves
    runtime: Path  # its JUPYTER_RUNTIME_DIR: kernels and mcp_notebook discovery files
    process: subprocess.Popen
    app: str = "lab"

    def notebook_url(self, path: str, workspace: str | None = None) -> str:
        """Where the front end opens the notebook at ``path`` (a workspace of its own in
        JupyterLab, so that it restores no other test's notebook; Notebook 7 opens one
        document per page and has none)."""
        if self.app == "notebook":
            return f"{self.url}/notebooks/{path}?token={self.token}"
        where = f"/workspaces/{workspace}" if workspace else ""
        return f"{self.url}/lab{where}/tree/{path}?token={self.token}"

    def write_notebook(self, name: str, cells: list[str]) -> str:
        """``NAME.ipynb`` in the server's root, of these code cells, on the python3 kernel."""
        notebook(self.root / f"{name}.ipynb", *cells, kernel=True)
        return f"{name}.ipynb"

    async def discovered(self, name: str, timeout: float = 60) -> Served:
        """The URL and token that notebook ``name``'s server wrote to its discovery file
        (a ``Served`` without a kernel)."""
        files = await until(
            lambda: list((self.runtime / "mcp_notebook").glob(f"{name}-*.json")),
            "the notebook's server to write its discovery file",
            timeout,
        )
        record = json.loads(files[0].read_text())
        return Served(kernel=None, url=record["url"], token=record["token"])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_up(lab: Lab, log: Path, timeout: float = 90) -> None:
    request = urllib.request.Request(
        f"{lab.url}/api/status", headers={"Authorization": f"token {lab.token}"}
    )

    def up() -> str | None:
        if lab.process.poll() is not None:
            return "exited"
        try:
            with urllib.request.urlopen(request, timeout=2):
                return "up"
        except (urllib.error.URLError, OSError):
            return None

    try:
        state = wait_until(up, f"{lab.app} to start", timeout)
    except AssertionError as late:
        raise AssertionError(f"{late}:\n" + log.read_text()) from None
    if state == "exited":
        raise AssertionError(f"{lab.app} exited:\n" + log.read_text())


# The Python module that starts each front end's server: its --help, its options.
SERVERS = {"lab": "jupyterlab", "notebook": "notebook"}


@contextmanager
def _serve(tmp_path_factory, app: str) -> Iterator[Lab]:
    """A server for front end ``app`` serving a copy of notebooks/ (it autosaves: the
    repository stays clean)."""
    base = tmp_path_factory.mktemp(app)
    root = base / "notebooks"
    shutil.copytree(ROOT / "notebooks", root)
    folders = {
        "JUPYTER_CONFIG_DIR": base / "config",
        "JUPYTER_DATA_DIR": base / "data",
        "JUPYTER_RUNTIME_DIR": base / "runtime",
        "JUPYTERLAB_SETTINGS_DIR": base / "settings",
        "JUPYTERLAB_WORKSPACES_DIR": base / "workspaces",
    }
    for folder in folders.values():
        folder.mkdir()
    # Not asked whether to fetch Jupyter's news: a toast in every screenshot otherwise.
    news = folders["JUPYTERLAB_SETTINGS_DIR"] / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    # This checkout's build of the JupyterLab extension, not the environment's copy (maybe
    # another checkout's): JUPYTER_PATH comes first in JupyterLab's search path.
    extensions = base / "jupyter-path" / "labextensions"
    extensions.mkdir(parents=True)
    (extensions / "mcp-notebook").symlink_to(ROOT / "labextension", target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "MCP_NOTEBOOK"))}
    env.update({k: str(v) for k, v in folders.items()})
    env["JUPYTER_PATH"] = str(base / "jupyter-path")
    port, token = _free_port(), "browser-test-token"
    log = base / "server.log"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            SERVERS[app],
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--ServerApp.port_retries=0",
            "--allow-root",
            f"--IdentityProvider.token={token}",
            # Notebook 7 runs JupyterLab's server extension too: these hold for both.
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
            f"--ServerApp.root_dir={root}",
        ],
        env=env,
        cwd=root,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        **portable.spawn_options(),
    )
    runtime = folders["JUPYTER_RUNTIME_DIR"]
    lab = Lab(f"http://127.0.0.1:{port}", token, root, runtime, process, app)
    try:
        _wait_until_up(lab, log)
        yield lab
    finally:
        portable.stop(process)  # the server shuts its kernels down
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[Lab]:
    """JupyterLab."""
    with _serve(tmp_path_factory, "lab") as served:
        yield served


@pytest.fixture(scope="module", params=sorted(SERVERS))
def front_end(request, tmp_path_factory) -> Iterator[Lab]:
    """Each front end in turn, JupyterLab and Notebook 7, for the tests that hold in both."""
    with _serve(tmp_path_factory, request.param) as served:
        yield served
