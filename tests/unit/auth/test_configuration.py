"""The same settings everywhere: ``serve --auth-*``, an export's ``MCP_AUTH_*`` and
``mcp.start(oauth=...)``; bad values are refused with a sentence, before anything serves."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import nbformat
import pytest
import uvicorn

from mcp_notebook.auth.config import AuthConfig, AuthConfigError, from_env, from_settings
from mcp_notebook.cli import _parser, main
from mcp_notebook.export.runtime import asgi_app, exported_app
from tests.oauth.issuer import Issuer, running_issuer
from tests.oauth.serving import make_app
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as issuer:
        yield issuer


def test_serve_flags_become_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTROSPECTION_SECRET", "s3cret")
    args = _parser().parse_args(
        [
            "serve",
            "nb.ipynb",
            "--auth-issuer",
            "https://login.example.com/realms/lab",
            "--auth-audience",
            "https://mcp.example.com/mcp",
            "--auth-extra-audiences",
            "api://mcp-notebook,6f1c2d3e-0000-4000-8000-00000000abcd",
            "--auth-scopes",
            "mcp:tools, files:read",
            "--auth-introspection-url",
            "https://login.example.com/realms/lab/introspect",
            "--auth-client-id",
            "notebook",
            "--auth-client-secret-env",
            "INTROSPECTION_SECRET",
        ]
    )
    from mcp_notebook.auth.config import flag_values

    config = from_settings(flag_values(args))
    assert config == AuthConfig(
        issuer="https://login.example.com/realms/lab",
        audience="https://mcp.example.com/mcp",
        extra_audiences=("api://mcp-notebook", "6f1c2d3e-0000-4000-8000-00000000abcd"),
        scopes=("mcp:tools", "files:read"),
        introspection_url="https://login.example.com/realms/lab/introspect",
        client_id="notebook",
        client_secret="s3cret",
    )
    assert "s3cret" not in repr(config)  # a log line or traceback never shows it


def test_an_exports_environment_is_the_same_configuration() -> None:
    config = from_env(
        {
            "MCP_AUTH_ISSUER": "https://tenant.auth0.com/",
            "MCP_AUTH_AUDIENCE": "https://api.example.com/mcp",
            "MCP_AUTH_SCOPES": "read:data write:data",
            "MCP_AUTH_EXTRA_AUDIENCES": "api://mcp-notebook",
        }
    )
    assert config is not None
    assert (config.issuer, config.audience, config.scopes, config.extra_audiences) == (
        "https://tenant.auth0.com/",
        "https://api.example.com/mcp",
        ("read:data", "write:data"),
        ("api://mcp-notebook",),
    )
    assert from_env({}) is None  # nothing set: exactly as before, the static token


@pytest.mark.parametrize(
    "values,says",
    [
        ({"audience": "https://x.example/mcp"}, "need an issuer"),
        ({"issuer": "ftp://issuer.example"}, "not an http(s) URL"),
        ({"issuer": "http://issuer.example"}, "must use https"),
        ({"issuer": "https://i.example", "jwks_url": "nope"}, "--auth-jwks-url"),
        ({"issuer": "https://i.example", "scopes": 'a "b'}, "not a valid OAuth scope"),
        ({"issuer": "https://i.example", "client_secret_env": "NO_SUCH_VAR_X"}, "is not set"),
        ({"issuer": "https://i.example", "colour": "blue"}, "unknown auth settings"),
        ({"issuer": "https://i.example", "extra_audiences": 'api://x"y'}, "not an audience"),
        ({"issuer": "https://i.example", "extra_audiences": "1x:y"}, "not an absolute URI"),
        ({"issuer": "https://i.example", "extra_audiences": "api://x#y"}, "fragment"),
    ],
    ids=["no issuer", "not http", "http off loopback", "bad jwks url", "bad scope",
         "secret variable unset", "unknown setting", "audience with a quote",
         "audience colon not a URI", "audience with a fragment"],
)  # fmt: skip
def test_bad_values_are_refused_with_a_sentence(values: dict[str, str], says: str) -> None:
    with pytest.raises(AuthConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        from_settings(values, environ={})


@pytest.mark.parametrize(
    "flags,says",
    [
        (["--auth-issuer", "http://evil.example"], "must use https"),
        (["--auth-scopes", "mcp"], "need an issuer"),
        (["--auth-issuer", "https://i.example", "--transport", "stdio"], "--transport http"),
        (["--auth-issuer", "https://i.example", "--token", "t"], "instead of --token"),
    ],
    ids=["http issuer", "no issuer", "stdio", "with a token"],
)
def test_serve_refuses_bad_values_before_a_kernel_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], says: str
) -> None:
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps(nbformat.v4.new_notebook()))
    assert main(["serve", str(notebook), *flags]) == 2  # returns before any kernel starts
    captured = capsys.readouterr()
    assert says in captured.err
    assert captured.out == ""


def test_a_tool_can_name_scopes_only_as_a_list_of_scope_names() -> None:
    app = exported_app("scopes", {})
    with pytest.raises(TypeError, match="list of scope names"):
        app.tool(scopes="files:write")(lambda: 1)
    with pytest.raises(ValueError, match="Invalid scope"):
        app.tool(scopes=["two words"])(lambda: 1)


def test_an_export_reads_MCP_AUTH_and_checks_tokens(issuer: Issuer) -> None:
    box: dict[str, list[object]] = {"runs": [], "seen": []}
    app = asgi_app(
        make_app(box),
        inline=True,
        environ={"MCP_AUTH_ISSUER": issuer.url, "MCP_AUTH_SCOPES": "mcp"},
    )
    assert app.guard.token is None  # no static token alongside
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, "uvicorn listening")
        port = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}/mcp"
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        accept = {"Accept": "application/json, text/event-stream"}
        assert httpx.post(url, json=ping, headers=accept).status_code == 401
        token = issuer.mint(aud=url)
        headers = {**accept, "Authorization": f"Bearer {token}"}
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}},
        }  # fmt: skip
        assert httpx.post(url, json=init, headers=headers).status_code == 200
    finally:
        server.should_exit = True
        thread.join(10)
