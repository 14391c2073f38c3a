"""A lone surrogate against the notebook's own HTTP server, in a real kernel.

In a request it is refused where the body is decoded: 400 with ``-32600`` to the request's
id (none when the id itself holds one), never a 500 with an empty body; in a tool's result
it reaches the client as U+FFFD, and the call monitor shows the call. The kernel serves on.
"""

from __future__ import annotations

import pytest

from tests.conftest import MODES, connect, start_server
from tests.kernel.test_http_raw import (
    INVALID_REQUEST,
    SETUP,
    Endpoint,
    assert_healthy,
    expect_error,
)
from tests.kernel.test_monitor import labels, select_newest
from tests.unit.export.test_lone_surrogates import ODD_TEXT, ODD_TOOL
from tests.unit.protocol.test_json_policy import LONE_SURROGATES


@pytest.fixture(scope="module")
def served(kernel, frontend):
    return start_server(kernel, SETUP + ODD_TOOL)


@pytest.fixture(scope="module")
def ep(served) -> Endpoint:
    return Endpoint(served)


@pytest.mark.parametrize("text, request_id", LONE_SURROGATES.values(), ids=LONE_SURROGATES)
def test_a_lone_surrogate_in_a_request_is_400_invalid_request(ep, text, request_id):
    session = ep.open_session()
    for where in (None, session):  # the handshake era's first request, and in a session
        reply = ep.post(text.encode(), session=where)
        expect_error(reply, 400, INVALID_REQUEST, "lone surrogate", request_id=request_id)
    assert ep.rpc(session, "ping")["result"] == {}


def test_headers_carry_no_surrogate_and_odd_bytes_get_precise_errors(ep):
    # HTTP headers are bytes read as Latin-1; these are UTF-8 for U+DFFF, which is no text.
    ping = b'{"jsonrpc":"2.0","id":4,"method":"ping"}'
    reply = ep.post(ping, session="\xed\xbf\xbf")
    expect_error(reply, 404, INVALID_REQUEST, "session not found", request_id=4)
    call = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": MODERN_META}
    message = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call}
    modern = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
    reply = ep.post(message, extra={**modern, "Mcp-Name": "=?base64?7b+/?="})
    body = expect_error(reply, 400, -32020, request_id=5, method="tools/call")
    assert "Mcp-Name" in body["error"]["message"]


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


@MODES
async def test_a_lone_surrogate_in_a_result_reaches_the_client_as_a_replacement(
    served, frontend, mode
):
    box = frontend.open_monitor(served.kernel)
    parts = frontend.children(box)
    monitor = {"table": parts[4], "detail": parts[6], "output": parts[8]}
    async with connect(served, mode=mode) as client:
        result = await client.call_tool("odd", {"text": "x"})
        assert result.content[0].text == ODD_TEXT
        assert (await client.call_tool("add", {"a": 2, "b": 3})).content[0].text == "5"
    shown = await select_newest(frontend, monitor, "odd")
    assert "odd" in shown["detail"]
    assert any("odd" in row for row in labels(frontend, monitor))
    assert_healthy(Endpoint(served))
