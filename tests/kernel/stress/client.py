"""A lean keep-alive MCP client for the stress suite (http.client, one connection)."""

from __future__ import annotations

import http.client
import json
import select
import socket
from typing import Any
from urllib.parse import urlsplit

from tests.conftest import Served
from tests.kernel.test_http_raw import initialize_message

ACCEPT = "application/json, text/event-stream"


class KeepAlive:
    """One connection and one session; ``call`` checks the reply's id."""

    def __init__(self, served: Served, timeout: float = 60) -> None:
        parts = urlsplit(served.url)
        self.path = parts.path
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        self.headers = {"Content-Type": "application/json", "Accept": ACCEPT, **served.headers}
        self.next_id = 0

    def post(self, message: dict[str, Any]) -> tuple[int, Any]:
        self._reconnect_if_closed()
        self.conn.request("POST", self.path, json.dumps(message), self.headers)
        response = self.conn.getresponse()
        body = response.read()
        if response.status == 200 and "Mcp-Session-Id" in response.headers:
            self.headers["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
        return response.status, json.loads(body) if body else None

    def _reconnect_if_closed(self) -> None:
        """As HTTP clients do with a pooled connection: one the server closed while it was
        idle (its idle timeout, or room made at its connection cap) is replaced."""
        sock = self.conn.sock
        if sock is not None and select.select([sock], [], [], 0)[0]:  # EOF, between replies
            self.conn.close()
            self.conn.connect()
            self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def open_session(self) -> KeepAlive:
        status, body = self.post(initialize_message(0))
        assert status == 200, (status, body)
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        status, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202
        return self

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The reply to one request; raises AssertionError if its id is not ours."""
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        status, body = self.post(message)
        assert status == 200, (status, body)
        assert body["id"] == self.next_id, (body, self.next_id)
        return body

    def tool(self, name: str, **arguments: Any) -> Any:
        result = self.call("tools/call", {"name": name, "arguments": arguments})["result"]
        assert result["isError"] is False, result
        return result["content"][0]["text"]

    def close(self) -> None:
        self.conn.close()
