"""Tasks through `mcp-notebook bridge`, both eras: the bridge passes them through."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.schema import validate, validate_task_message
from tests.stdio import INITIALIZE, RawStdio
from tests.waiting import wait_until

EXT = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-bridge", "version": "1"},
}
SETUP = """
import asyncio

@mcp.tool
async def work(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return f"worked {seconds:g}s"
"""
_ids = itertools.count(100)


@pytest.fixture(scope="module")
def bridged(kernel):
    kernel.run("%load_ext mcp_notebook")
    kernel.run(SETUP)
    kernel.run("%mcp tasks --after 200ms")
    kernel.run("%mcp start --port 0 --name tasks-bridge")
    raw = RawStdio("bridge", "tasks-bridge")
    try:
        yield raw
    finally:
        raw.close()


def ask(raw: RawStdio, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request_id = next(_ids)
    raw.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    return raw.reply_to(request_id)


def test_a_2026_task_through_the_bridge(bridged):
    call = {"name": "work", "arguments": {"seconds": 1}, "_meta": META}
    created = validate_task_message("tools/call", ask(bridged, "tools/call", call)["result"])
    get = {"taskId": created["taskId"], "_meta": META}
    task = wait_until(
        lambda: (
            (found := ask(bridged, "tasks/get", get)["result"])["status"] != "working" and found
        ),
        "the task to finish working",
        timeout=60,
    )
    assert task["status"] == "completed"
    assert task["result"]["content"][0]["text"] == "worked 1s"
    slow = {"name": "work", "arguments": {"seconds": 60}, "_meta": META}
    long = ask(bridged, "tools/call", slow)["result"]
    ack = ask(bridged, "tasks/cancel", {"taskId": long["taskId"], "_meta": META})
    assert ack["result"] == {"resultType": "complete"}
    unknown = ask(bridged, "tasks/get", {"taskId": "nope", "_meta": META})
    assert unknown["error"]["code"] == -32602


def test_a_2025_11_25_task_through_the_bridge(bridged):
    bridged.send(INITIALIZE)
    init = bridged.reply_to(1)
    assert "tasks" in init["result"]["capabilities"]
    bridged.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = {"name": "work", "arguments": {"seconds": 0.3}, "task": {"ttl": 60000}}
    made = validate(ask(bridged, "tools/call", call)["result"], "CreateTaskResult", "2025-11-25")
    task_id = made["task"]["taskId"]
    result = ask(bridged, "tasks/result", {"taskId": task_id})["result"]
    assert result["content"][0]["text"] == "worked 0.3s"
    got = ask(bridged, "tasks/get", {"taskId": task_id})["result"]
    assert got["status"] == "completed"
    assert task_id in [t["taskId"] for t in ask(bridged, "tasks/list", {})["result"]["tasks"]]
