"""`mcp-notebook serve --debug-port`: VS Code's way in. A Debug Adapter Protocol client
attaches over TCP (loopback) to the served kernel's debugpy, and an agent's call stopped
by `%mcp break` in the notebook shows up there while the server keeps answering."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from pathlib import Path
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.serving import ServeProcess

NOTEBOOK = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {},
    "cells": [
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": "%load_ext mcp_notebook\n@mcp.tool\n"
            'def add(a: int, b: int = 1) -> int:\n    """Add."""\n'
            "    total = a + b\n    return total\n",
        },
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": "%mcp break add",
        },
    ],
}
TOKEN = "debug-token"


class Dap:
    """A minimal Debug Adapter Protocol client (Content-Length framed JSON over TCP)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self._buffer = b""
        self._seq = itertools.count(1)
        self._seen: list[dict[str, Any]] = []

    def send(self, command: str, arguments: dict[str, Any] | None = None) -> int:
        seq = next(self._seq)
        message = {"seq": seq, "type": "request", "command": command}
        message["arguments"] = arguments or {}
        body = json.dumps(message).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return seq

    def _read(self) -> dict[str, Any]:
        while b"\r\n\r\n" not in self._buffer:
            self._buffer += self._recv()
        head, self._buffer = self._buffer.split(b"\r\n\r\n", 1)
        length = int(head.split(b":")[1])
        while len(self._buffer) < length:
            self._buffer += self._recv()
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        return json.loads(body)

    def _recv(self) -> bytes:
        data = self.sock.recv(65536)
        assert data, "the debugger closed the connection"
        return data

    def wait(self, match) -> dict[str, Any]:
        for message in self._seen:
            if match(message):
                self._seen.remove(message)
                return message
        while True:
            message = self._read()
            if match(message):
                return message
            self._seen.append(message)

    def response(self, seq: int) -> dict[str, Any]:
        return self.wait(lambda m: m.get("type") == "response" and m["request_seq"] == seq)

    def event(self, name: str) -> dict[str, Any]:
        return self.wait(lambda m: m.get("type") == "event" and m["event"] == name)

    def request(self, command: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = self.response(self.send(command, arguments))
        assert reply["success"], reply
        return reply

    def attach(self) -> None:
        """As VS Code's "Python: Attach" (connect) does it."""
        self.request("initialize", {"adapterID": "debugpy", "clientID": "tests"})
        attach = self.send("attach", {"justMyCode": False})
        self.event("initialized")
        self.request("configurationDone")
        assert self.response(attach)["success"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_vs_code_attaches_to_a_served_notebook_and_breaks_on_an_agents_call(
    tmp_path: Path,
):
    notebook = tmp_path / "debugged.ipynb"
    notebook.write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    port = free_port()
    serve = ServeProcess(str(notebook), "--port", "0", "--token", TOKEN, "--debug-port", str(port))
    try:
        url = serve.wait_for_url()
        assert any(f"127.0.0.1:{port}" in line for line in serve.stderr)
        dap = Dap(port)
        dap.attach()
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as agent,
        ):
            call = asyncio.ensure_future(agent.call_tool("add", {"a": 2}))
            stopped = await asyncio.to_thread(dap.event, "stopped")
            thread_id = stopped["body"]["threadId"]
            trace = dap.request("stackTrace", {"threadId": thread_id})["body"]["stackFrames"]
            assert (trace[0]["name"], trace[0]["line"]) == ("add", 5)
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as other_http,
                Client(streamable_http_client(url, http_client=other_http), mode="legacy") as other,
            ):
                tools = await asyncio.wait_for(other.list_tools(), 30)  # answered while paused
                assert [tool.name for tool in tools.tools] == ["add"]
            assert not call.done()
            dap.request("continue", {"threadId": thread_id})
            result = await asyncio.wait_for(call, 60)
        assert result.content[0].text == "3"
        dap.sock.close()
    finally:
        serve.stop()
