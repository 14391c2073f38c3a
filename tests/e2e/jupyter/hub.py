"""A real JupyterHub for one test module: DummyAuthenticator, SimpleLocalProcessSpawner and
configurable-http-proxy from npm (run by the Node 22 the conformance tests install).

Each user's single-user server runs with a home of its own (so a runtime folder of its
own, hence discovery files of its own), as separate accounts would have.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx2

from tests import portable
from tests.e2e.conformance.node import _npm_install, cache_dir, node22
from tests.e2e.jupyter.server import ServerKernel
from tests.waiting import wait_until

CHP = "configurable-http-proxy@5"
NEEDS = "JupyterHub's proxy is configurable-http-proxy from npm, run by npm's Node 22 (Linux)"


def proxy_command() -> list[str]:
    node = node22()
    prefix = cache_dir() / f"npm-{CHP}"
    _npm_install(prefix, CHP, node_bin=node)
    script = prefix / "node_modules" / "configurable-http-proxy" / "bin" / "configurable-http-proxy"
    return [str(node), str(script)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Hub:
    def __init__(self, users: tuple[str, ...] = ("alice", "bob")) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="mcp-notebook-hub-"))
        self.port, self.admin = free_port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "ip": "127.0.0.1",
            "port": self.port,
            "hub_port": free_port(),
            "proxy_api": f"http://127.0.0.1:{free_port()}",
            "proxy": proxy_command(),
            "root": str(self.root),
            "users": list(users),
            "admin": self.admin,
            "python": sys.executable,
        }
        (self.root / "jupyterhub_config.py").write_text(CONFIG.format(json.dumps(config)))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(self.root / "jupyterhub_config.py")],
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(self.root / "hub.log", "wb"),  # noqa: SIM115
            **portable.spawn_options(),
        )
        wait_until(self._up, "the hub's API", timeout=90)

    def _up(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"jupyterhub exited:\n{self.log()[-4000:]}")
        try:
            return self.hub_api("GET", "").status_code == 200
        except httpx2.HTTPError:
            return False

    def hub_api(self, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        headers = {"Authorization": f"token {self.admin}"}
        return httpx2.request(
            method, f"{self.url}/hub/api/{path}", headers=headers, timeout=30, **kwargs
        )

    def token_for(self, user: str) -> str:
        reply = self.hub_api("POST", f"users/{user}/tokens", json={"note": "mcp test"})
        assert reply.status_code in (200, 201), reply.text
        return reply.json()["token"]

    def spawn(self, user: str) -> SingleUser:
        reply = self.hub_api("POST", f"users/{user}/server")
        assert reply.status_code in (201, 202), reply.text

        def ready() -> bool:
            server = self.hub_api("GET", f"users/{user}").json().get("servers", {}).get("")
            return bool(server and server.get("ready"))

        wait_until(ready, f"{user}'s server", timeout=90)
        return SingleUser(self, user, self.token_for(user))

    def log(self) -> str:
        return (self.root / "hub.log").read_text(errors="replace")

    def stop(self) -> None:
        for user in ("alice", "bob"):
            with contextlib.suppress(httpx2.HTTPError):
                self.hub_api("DELETE", f"users/{user}/server")
        portable.stop(self.process)


class SingleUser:
    """One user's server behind the hub, reached at the hub's URL with the user's token."""

    def __init__(self, hub: Hub, user: str, token: str) -> None:
        self.hub, self.user, self.token = hub, user, token
        self.url = f"{hub.url}/user/{user}/"
        self.runtime_dir = hub.root / "home" / user / ".local/share/jupyter/runtime"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def endpoint(self, name: str) -> str:
        return f"{self.url}mcp-notebook/{name}/mcp"

    def api(self, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        kwargs.setdefault("headers", self.headers)
        return httpx2.request(method, self.url + path, timeout=30, **kwargs)

    def start_kernel(self) -> ServerKernel:
        reply = self.api("POST", "api/kernels", json={"name": "python3"})
        assert reply.status_code == 201, reply.text
        return ServerKernel(self, reply.json()["id"], self.runtime_dir)


CONFIG = """\
import json
settings = json.loads({0!r})
c = get_config()  # noqa: F821
c.JupyterHub.ip = settings["ip"]
c.JupyterHub.port = settings["port"]
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = settings["hub_port"]
c.JupyterHub.public_url = f"http://127.0.0.1:{{settings['port']}}"
c.ConfigurableHTTPProxy.api_url = settings["proxy_api"]
c.ConfigurableHTTPProxy.command = settings["proxy"]
c.ConfigurableHTTPProxy.should_start = True
c.JupyterHub.db_url = f"sqlite:///{{settings['root']}}/hub.sqlite"
c.JupyterHub.cookie_secret_file = f"{{settings['root']}}/cookie_secret"
c.JupyterHub.pid_file = f"{{settings['root']}}/hub.pid"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = "not-a-secret"
c.Authenticator.allowed_users = set(settings["users"])
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = settings["root"] + "/home/{{username}}"
c.Spawner.cmd = [settings["python"], "-m", "jupyterhub.singleuser"]
c.Spawner.args = ["--allow-root"]
c.Spawner.start_timeout = 90
c.Spawner.http_timeout = 90
c.JupyterHub.services = [{{"name": "mcp-test-admin", "api_token": settings["admin"]}}]
c.JupyterHub.load_roles = [
    {{"name": "mcp-test-admin", "scopes": ["admin:users", "admin:servers", "tokens"],
     "services": ["mcp-test-admin"]}},
]
"""
