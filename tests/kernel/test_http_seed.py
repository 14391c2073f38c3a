"""The seed-000 "MCP v1.0" dialect on the notebook's /mcp endpoint, by a client written
from that document alone: POST JSON in, JSON out; NDJSON streaming when asked for."""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.conftest import start_server
from tests.sources import ADD_INTS
from tests.waiting import wait_until

SETUP = (
    ADD_INTS
    + '''
@mcp.tool
def fail() -> str:
    """Always fails."""
    raise RuntimeError("the disk is full")

note = "v1"
mcp.resource(var="note", uri="text://note", description="A note")
'''
)
ADD = "mcp://seeded/tools/add:v1"


class SeedClient:
    def __init__(self, url: str, token: str | None) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path, self.token = parts.hostname, parts.port, parts.path, token

    def post(self, body: bytes, content_type: str = "application/json", accept: str | None = None):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        headers = {"Content-Type": content_type, "Authorization": f"Bearer {self.token}"}
        if accept:
            headers["Accept"] = accept
        connection.request("POST", self.path, body, headers)
        return connection, connection.getresponse()

    def rpc(self, method: str, params: Any = None, id: int = 1) -> tuple[int, dict]:
        message = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        connection, response = self.post(json.dumps(message).encode())
        try:
            return response.status, json.loads(response.read())
        finally:
            connection.close()


@pytest.fixture(scope="module")
def seed(kernel):
    served = start_server(kernel, SETUP, "%mcp start --port 0 --name seeded")
    return SeedClient(served.url, served.token)


def test_execute_tool_answers_output(seed):
    status, reply = seed.rpc("mcp/executeTool", {"id": ADD, "arguments": {"a": 2, "b": 3}})
    assert status == 200
    assert reply == {"jsonrpc": "2.0", "id": 1, "result": {"output": {"result": 5}}}


def test_lists_name_every_definition_by_a_stable_mcp_id(seed):
    _, tools = seed.rpc("mcp/listTools")
    assert [t["mcpId"] for t in tools["result"]] == [ADD, "mcp://seeded/tools/fail:v1"]
    assert all(
        {"name", "description", "inputSchema", "outputSchema"} <= set(t) for t in tools["result"]
    )
    _, resources = seed.rpc("mcp/listResources")
    [note] = resources["result"]
    assert note["mcpId"] == "mcp://seeded/resources/note:v1"
    assert (note["mediaType"], note["content"]) == ("text/plain", "v1")


def test_json_rpc_errors_are_200_with_the_documents_data(seed):
    status, reply = seed.rpc("mcp/executeTool", {"id": ADD, "arguments": {"a": 2}})
    assert status == 200
    assert reply["error"]["code"] == -32602
    assert reply["error"]["message"] == "Invalid params"
    assert "'b'" in reply["error"]["data"] and ADD in reply["error"]["data"]
    status, failed = seed.rpc("mcp/executeTool", {"id": "mcp://seeded/tools/fail:v1"})
    assert status == 200 and -32099 <= failed["error"]["code"] <= -32000
    assert "the disk is full" in json.dumps(failed["error"])
    _, unknown = seed.rpc("mcp/executeTool", {"id": "mcp://seeded/tools/nope:v1"})
    assert "error" in unknown


def test_malformed_json_is_400(seed):
    connection, response = seed.post(b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert response.status == 400
    assert json.loads(response.read())["error"]["code"] == -32700
    connection.close()


def test_a_notification_alone_gets_no_reply(seed):
    connection, response = seed.post(b'{"jsonrpc": "2.0", "method": "initialized"}')
    assert (response.status, response.read()) == (202, b"")
    connection.close()


def test_ndjson_stream_with_handshake_stays_open_for_resource_changes(seed, kernel):
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientCapabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "mcp/listResources"},
    ]
    body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    connection, response = seed.post(body, "application/x-ndjson", "application/x-ndjson")
    assert response.status == 200
    assert response.headers["Content-Type"] == "application/x-ndjson"
    assert response.headers["Transfer-Encoding"] == "chunked"
    received: list[dict] = []

    def read() -> None:
        for raw in response:
            if raw.strip():
                received.append(json.loads(raw))

    threading.Thread(target=read, daemon=True).start()
    wait_until(lambda: len(received) >= 2, "the handshake's two replies", timeout=15)
    capabilities = received[0]["result"]["capabilities"]
    assert capabilities["executionProvider"] == {"execute": True}
    assert received[1]["id"] == 2
    kernel.run('note = "v2"')
    wait_until(lambda: len(received) >= 3, "the change notification", timeout=15)
    connection.sock.shutdown(2)
    connection.close()
    assert received[2] == {
        "jsonrpc": "2.0",
        "method": "mcp/resourceDidChange",
        "params": {"mcpId": "mcp://seeded/resources/note:v1"},
    }
