"""Where a kernel tells a client outside to connect (reach.py, serverext/where.py)."""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace

import psutil  # noqa: F401  # imported before sys.platform is patched: it picks its platform module
import pytest

from mcp_notebook.clients import CLIENTS, through_jupyter_snippet
from mcp_notebook.reach import TOKEN_PLACEHOLDER, URL_ENV, loopback_note, through_jupyter
from mcp_notebook.serverext.where import server_url

HUB = {
    "JUPYTERHUB_SERVICE_PREFIX": "/user/alice/",
    "JUPYTERHUB_PUBLIC_HUB_URL": "https://hub.example/hub/",
    "JUPYTERHUB_BASE_URL": "/",
}


def test_outside_a_jupyter_server_with_the_extension_there_is_no_such_url():
    assert through_jupyter("sales", {}) is None
    assert through_jupyter("sales", {"JUPYTERHUB_SERVICE_PREFIX": "/user/alice/"}) is None


def test_the_url_joins_the_servers_url_and_the_quoted_name():
    through = through_jupyter("my sales/2", {URL_ENV: "http://nb.example:8888/base/"})
    assert through.url == "http://nb.example:8888/base/mcp-notebook/my%20sales%2F2/mcp"
    assert through.absolute and through.token is None
    assert through.header() == f"Authorization: token {TOKEN_PLACEHOLDER}"


def test_the_jupyter_token_is_read_from_the_parent_servers_info_file(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "jpserver-4242.json").write_text(json.dumps({"token": "abc", "port": 1}))
    env = {URL_ENV: "http://localhost:8888/", "JPY_PARENT_PID": "4242"}
    assert through_jupyter("x", env).header() == "Authorization: token abc"
    assert through_jupyter("x", {**env, "JPY_PARENT_PID": "4243"}).token is None


def test_on_windows_the_token_is_found_though_jpy_parent_pid_is_a_handle(tmp_path, monkeypatch):
    # jupyter_client on Windows sets JPY_PARENT_PID to an inherited handle of the server
    # process (launcher.py: DuplicateHandle), a number that names no pid's info file.
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setattr(sys, "platform", "win32")
    server = os.getppid()  # this process stands for the kernel, its parent for the server
    (tmp_path / f"jpserver-{server}.json").write_text(json.dumps({"token": "abc", "port": 1}))
    env = {URL_ENV: "http://localhost:8888/", "JPY_PARENT_PID": "1884"}
    assert through_jupyter("x", env).header() == "Authorization: token abc"
    # Without a server file among the parents: the placeholder, as before.
    (tmp_path / f"jpserver-{server}.json").unlink()
    assert through_jupyter("x", env).token is None


def test_under_jupyterhub_the_public_url_or_the_path_and_a_hub_token():
    app = SimpleNamespace(connection_url="http://127.0.0.1:41000/user/alice/")
    public = {**HUB, "JUPYTERHUB_PUBLIC_URL": "https://hub.example/user/alice/"}
    assert server_url(app, public) == "https://hub.example/user/alice/"
    assert server_url(app, HUB) == "/user/alice/"  # the hub was not told its address
    through = through_jupyter("sales", {**HUB, URL_ENV: "/user/alice/", "JPY_PARENT_PID": "1"})
    assert through.url == "/user/alice/mcp-notebook/sales/mcp" and not through.absolute
    assert through.token is None  # a hub's single-user server has no token of its own
    assert "https://hub.example/hub/token" in through.token_hint


def test_a_plain_server_publishes_its_url_never_its_token():
    app = SimpleNamespace(
        connection_url="http://127.0.0.1:8888/base/",
        public_url="http://127.0.0.1:8888/base/?token=secret",
        custom_display_url="",
    )
    assert server_url(app, {}) == "http://127.0.0.1:8888/base/"
    app.custom_display_url = "https://lab.example/base/?token=secret"
    assert server_url(app, {}) == "https://lab.example/base/"
    assert URL_ENV not in os.environ  # the test process is no Jupyter Server


def test_every_client_gets_a_snippet_with_the_jupyter_header():
    for client in CLIENTS:
        snippet = through_jupyter_snippet(client, "sales", "https://h/x/mcp", "token abc")
        assert "https://h/x/mcp" in snippet.text and "abc" in snippet.text


@pytest.mark.parametrize(
    "url, loopback",
    [
        ("http://127.0.0.1:8888/mcp-notebook/s/mcp", "127.0.0.1"),
        ("http://localhost:8888/base/mcp-notebook/s/mcp", "localhost"),
        ("http://[::1]:8888/mcp-notebook/s/mcp", "::1"),
        ("http://127.0.1.1:8888/mcp-notebook/s/mcp", "127.0.1.1"),
        ("http://nb.example:8888/mcp-notebook/s/mcp", None),
        ("http://10.0.0.5:8888/mcp-notebook/s/mcp", None),
        ("/user/alice/mcp-notebook/s/mcp", None),  # a hub's path: its address is its own
    ],
)
def test_a_loopback_url_is_said_to_be_unreachable_from_another_machine(url, loopback):
    note = loopback_note(url)
    if loopback is None:
        assert note is None
    else:
        assert f"loopback only ({loopback})" in note and "--ip=0.0.0.0" in note
        assert "ssh -L" in note and URL_ENV in note
