"""A real `jupyter server` subprocess, and a kernel it started, for the relay's tests."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx2
from jupyter_client import BlockingKernelClient
from jupyter_core.paths import jupyter_runtime_dir

from tests import portable
from tests.kernels import Kernel
from tests.waiting import wait_until


class JupyterServer:
    """``python -m jupyter_server`` with a token and a non-root base URL, on a free port.

    The extension is not named on the command line: it is on because the package's
    ``jupyter_server_config.d`` file is installed (what a user's install does)."""

    def __init__(
        self,
        base_url: str = "/base/",
        *extra: str,
        env: dict[str, str] | None = None,
        token: str | None = None,
    ):
        """``token=""``: Jupyter Server accepts requests without one."""
        self.token = secrets.token_hex(16) if token is None else token
        self.root = tempfile.mkdtemp(prefix="mcp-notebook-jupyter-")
        command = [
            sys.executable,
            "-m",
            "jupyter_server",
            "--ServerApp.ip=127.0.0.1",
            "--ServerApp.port=0",
            "--ServerApp.port_retries=0",
            "--ServerApp.open_browser=False",
            f"--IdentityProvider.token={self.token}",
            "--allow-root",  # CI containers run as root
            f"--ServerApp.base_url={base_url}",
            f"--ServerApp.root_dir={self.root}",
            *extra,
        ]
        self.process = subprocess.Popen(
            command,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=open(Path(self.root) / "server.out", "wb"),  # noqa: SIM115
            stderr=open(Path(self.root) / "server.log", "wb"),  # noqa: SIM115
            **portable.spawn_options(),
        )
        info_file = Path(jupyter_runtime_dir()) / f"jpserver-{self.process.pid}.json"
        wait_until(lambda: info_file.exists() or self.process.poll() is not None, "jpserver file")
        if self.process.poll() is not None:
            raise AssertionError(f"jupyter server exited: {self.log()}")
        info = wait_until(lambda: _json(info_file), "a readable jpserver file")
        self.port: int = info["port"]
        self.base_url: str = info["base_url"]
        self.origin = f"http://127.0.0.1:{self.port}"
        self.url = self.origin + self.base_url  # ends with /

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"} if self.token else {}

    def endpoint(self, name: str) -> str:
        return f"{self.url}mcp-notebook/{name}/mcp"

    def api(self, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        kwargs.setdefault("headers", self.headers)
        return httpx2.request(method, self.url + path, timeout=30, **kwargs)

    def start_kernel(self) -> ServerKernel:
        reply = self.api("POST", "api/kernels", json={"name": "python3"})
        assert reply.status_code == 201, reply.text
        return ServerKernel(self, reply.json()["id"])

    def log(self) -> str:
        return (Path(self.root) / "server.log").read_text(errors="replace")

    def output(self) -> str:
        """What the server (and its kernels' native code) wrote to stdout."""
        return (Path(self.root) / "server.out").read_text(errors="replace")

    def stop(self) -> None:
        portable.stop(self.process)


def _json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


class ServerKernel(Kernel):
    """A kernel Jupyter Server started (POST api/kernels: it inherits the server's
    environment), driven over its channels from the connection file the server wrote."""

    def __init__(self, server: Any, kernel_id: str, runtime_dir: Path | None = None) -> None:
        """``server``: what started it (``api(method, path)`` reaches its REST API);
        ``runtime_dir``: where that server writes connection files (default: ours)."""
        self.server, self.id = server, kernel_id
        self.manager = None
        folder = runtime_dir or Path(jupyter_runtime_dir())
        self.client = BlockingKernelClient(connection_file=str(folder / f"kernel-{kernel_id}.json"))
        self.client.load_connection_file()
        self.client.start_channels()

        def ready() -> bool:
            try:
                self.client.wait_for_ready(timeout=60)
                return True
            except RuntimeError:
                # Without a manager the client judges "alive" by the heartbeat, which a
                # kernel still starting on a loaded machine may not answer yet.
                if not self.alive():
                    raise
                return False

        wait_until(ready, "the kernel to be ready", timeout=90)

    def alive(self) -> bool:
        return self.server.api("GET", f"api/kernels/{self.id}").status_code == 200

    def shutdown(self) -> None:
        self.client.stop_channels()
        self.server.api("DELETE", f"api/kernels/{self.id}")
