"""``mcp-notebook serve --auth-issuer``: the headless notebook is an OAuth resource
server, which the official SDK client reaches with an access token of the issuer."""

from __future__ import annotations

import json
import types
from collections.abc import Iterator
from pathlib import Path

import httpx
import nbformat
import pytest

from tests.conftest import connect
from tests.oauth.issuer import Issuer, running_issuer
from tests.serving import ServeProcess

CELLS = [
    "%load_ext mcp_notebook",
    "from mcp_notebook import Context\n"
    "@mcp.tool\n"
    "def whoami(ctx: Context) -> str:\n"
    "    return ctx.caller.who if ctx.caller else 'nobody'\n"
    "@mcp.tool(scopes=['files:write'])\n"
    "def write(text: str) -> str:\n"
    "    return 'written'\n",
]


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as issuer:
        yield issuer


@pytest.fixture(scope="module")
def served(issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    path = Path(tmp_path_factory.mktemp("oauth")) / "oauth.ipynb"
    path.write_text(json.dumps(notebook))
    serve = ServeProcess(
        str(path), "--port", "0", "--auth-issuer", issuer.url, "--auth-scopes", "mcp"
    )
    try:
        yield serve.wait_for_url()
        told = "".join(serve.stderr)
        assert "Token:" not in told and "Authentication is off" not in told  # no static token
        assert f"OAuth: access tokens of {issuer.url}" in told
    finally:
        serve.stop()


async def test_the_sdk_client_calls_a_tool_with_an_access_token(
    issuer: Issuer, served: str
) -> None:
    token = issuer.mint(aud=served, sub="frank")
    endpoint = types.SimpleNamespace(url=served, headers={"Authorization": f"Bearer {token}"})
    async with connect(endpoint, "legacy") as client:  # type: ignore[arg-type]
        result = await client.call_tool("whoami", {})
    assert result.content[0].text == "frank (client app-1)"


def test_without_a_token_it_points_to_its_metadata(issuer: Issuer, served: str) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    refused = httpx.post(served, json=ping, headers={"Accept": "application/json"})
    assert refused.status_code == 401
    base = served.rsplit("/mcp", 1)[0]
    document = httpx.get(base + "/.well-known/oauth-protected-resource/mcp").json()
    assert document["resource"] == served
    assert document["authorization_servers"] == [issuer.url]


def test_a_tool_needing_more_scope_is_403(issuer: Issuer, served: str) -> None:
    token = issuer.mint(aud=served)
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "write",
            "arguments": {"text": "x"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "write",
    }
    refused = httpx.post(served, json=call, headers=headers)
    assert refused.status_code == 403
    assert 'error="insufficient_scope"' in refused.headers["WWW-Authenticate"]
