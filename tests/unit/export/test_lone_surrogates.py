"""A lone surrogate (``"\\udfff"``: valid JSON, but no Unicode text) through the wire.

In a request (id, method, params, a key) it is refused where it is decoded: ``-32600`` to
the request's id when that id is readable, with no id when the id itself holds one; the
process serves on. In a tool's result it goes out as U+FFFD. Here: the bridge, the
export's stdio and the export's ASGI app; the kernel's HTTP server is in
tests/kernel/test_lone_surrogates.py, ``serve --transport stdio`` in
tests/e2e/serve/test_lone_surrogates_stdio.py, the Jupyter Server relay in tests/e2e/jupyter/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import nbformat
import pytest

from mcp_notebook.export.package import export_notebook
from mcp_notebook.export.runtime import exported_app, server_of
from mcp_notebook.transports.asgi import McpAsgiApp
from tests.export.messages import INITIALIZE
from tests.stdio import FakeNotebook, FramedStdio, encode_frame, is_reply, strict_json
from tests.unit.bridge.test_stdio_replies import answer
from tests.unit.export.test_export_asgi_hostile import TOKEN, exchange, post_scope
from tests.unit.protocol.test_json_policy import LONE_SURROGATES

INVALID_REQUEST = -32600
PING = {"jsonrpc": "2.0", "id": 99, "method": "ping"}
# A tool whose result holds a lone surrogate, as a file name read with surrogateescape may.
ODD_TOOL = '''
@mcp.tool
def odd(text: str) -> str:
    """The text, and a lone surrogate."""
    return text + "\\udfff"
'''
ODD_TEXT = "x\ufffd"  # what the client reads: the replacement character


def refusals(messages: list[Any]) -> dict[Any, list[dict[str, Any]]]:
    """The -32600 errors written, by id (None: no id)."""
    found: dict[Any, list[dict[str, Any]]] = {}
    for message in messages:
        if isinstance(message, dict) and message.get("error", {}).get("code") == INVALID_REQUEST:
            found.setdefault(message.get("id"), []).append(message)
    return found


def assert_each_refused_once(messages: list[Any]) -> None:
    expected: dict[Any, int] = {}
    for _, request_id in LONE_SURROGATES.values():
        expected[request_id] = expected.get(request_id, 0) + 1
    found = refusals(messages)
    assert {key: len(errors) for key, errors in found.items()} == expected, messages
    for error in (error for errors in found.values() for error in errors):
        assert "lone surrogate" in json.dumps(error["error"])  # the message or its data


# -- the bridge ------------------------------------------------------------------------
@pytest.fixture
def notebook() -> Iterator[FakeNotebook]:
    fake = FakeNotebook(answer)
    try:
        yield fake
    finally:
        fake.close()


@pytest.mark.parametrize("framing", ["ndjson", "content-length"])
def test_the_bridge_refuses_a_lone_surrogate_with_one_error_and_serves_on(notebook, framing):
    raw = FramedStdio("bridge", "--url", notebook.url, "--token", "t0k", framing=framing)
    try:
        for text, _ in LONE_SURROGATES.values():
            raw.write(encode_frame(framing, text.encode()))
        raw.send(PING)
        assert raw.reply_to(99)["result"] == {}
        assert_each_refused_once(raw.messages)
        assert [seen.body["id"] for seen in notebook.seen] == [99]  # none was relayed
    finally:
        assert raw.close() == 0, b"".join(raw.stderr).decode(errors="replace")
    assert raw.bad == []


# -- the export's stdio ----------------------------------------------------------------
def test_the_exports_stdio_refuses_a_lone_surrogate_and_replaces_one_in_a_result(tmp_path):
    notebook = tmp_path / "odd.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext mcp_notebook"),
        nbformat.v4.new_code_cell(ODD_TOOL),
    ]
    nbformat.write(nb, notebook)
    result = export_notebook(notebook, tmp_path / "out", check=False)
    call = {"name": "odd", "arguments": {"text": "x"}}
    lines = [
        json.dumps(INITIALIZE),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        *(text for text, _ in LONE_SURROGATES.values()),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}),
        json.dumps(PING),
    ]
    done = subprocess.run(
        [sys.executable, "-m", result.package],
        input="".join(line + "\n" for line in lines).encode(),
        capture_output=True,
        cwd=result.directory,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(result.directory), *sys.path])},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    messages = [strict_json(line) for line in done.stdout.splitlines()]
    assert_each_refused_once(messages)
    (called,) = [m for m in messages if is_reply(m, 2)]
    assert called["result"]["content"] == [{"type": "text", "text": ODD_TEXT}]
    assert next(m for m in messages if is_reply(m, 99))["result"] == {}


# -- the export's ASGI app -------------------------------------------------------------
def odd_app() -> McpAsgiApp:
    app = exported_app("odd", {})

    @app.tool
    def odd(text: str) -> str:
        return text + "\udfff"

    return McpAsgiApp(server_of(app, inline=True), token=TOKEN)


async def post(app: McpAsgiApp, body: bytes, session: str = "") -> tuple[int, dict, Any]:
    """One POST through the app: its status, headers and JSON body."""
    scope = post_scope([(b"mcp-session-id", session.encode())] if session else [])
    chunks = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    (start,) = [m for m in sent if m["type"] == "http.response.start"]
    names = {k.decode(): v.decode() for k, v in start.get("headers", [])}
    data = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], names, json.loads(data) if data else None


@pytest.mark.parametrize("text, request_id", LONE_SURROGATES.values(), ids=LONE_SURROGATES)
async def test_the_exports_asgi_app_answers_a_lone_surrogate_with_400(text, request_id):
    app = odd_app()
    status, headers, body = await post(app, json.dumps(INITIALIZE).encode())
    assert status == 200, body
    session = headers["mcp-session-id"]
    for where in ("", session):  # without a session, and in one
        status, _, body = await post(app, text.encode(), where)
        assert status == 400, body
        assert body["error"]["code"] == INVALID_REQUEST
        assert "lone surrogate" in body["error"]["message"]
        assert body.get("id") == request_id and ("id" in body) == (request_id is not None)
    status, _, body = await post(app, json.dumps(PING).encode(), session)
    assert status == 200 and body["result"] == {}  # serving on


async def test_the_exports_asgi_app_replaces_a_lone_surrogate_in_a_result():
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    call = {"name": "odd", "arguments": {"text": "x"}, "_meta": meta}
    message = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}
    headers = [
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", b"odd"),
    ]
    status, body = await exchange(odd_app(), headers, [json.dumps(message).encode()])
    assert status == 200, body
    assert body["result"]["content"] == [{"type": "text", "text": ODD_TEXT}]
