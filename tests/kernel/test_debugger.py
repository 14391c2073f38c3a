"""The kernel's own debugger (debugpy in ipykernel), driven as JupyterLab drives it."""

from __future__ import annotations

import asyncio
import queue

import pytest

from ..conftest import connect, start_server
from .debugging import Debugger

SETUP = '''
@mcp.tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b
'''

PAUSING_CELL = """def paused_here(n):
    doubled = n * 2
    return doubled

paused_here(21)
"""


@pytest.fixture(scope="module")
def served(kernel):
    return start_server(kernel, SETUP)


@pytest.fixture
def debugger(served):
    debugger = Debugger(served.kernel)
    debugger.start()
    try:
        yield debugger
    finally:
        debugger.stop()


def stopped_thread(debugger: Debugger) -> int:
    stopped = debugger.event("stopped")
    return stopped["body"]["threadId"]


def execute_reply(served, msg_id: str) -> dict:
    while True:
        try:
            reply = served.kernel.client.get_shell_msg(timeout=60)
        except queue.Empty:
            raise AssertionError("the cell never finished") from None
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]


async def test_the_server_answers_while_a_cell_is_stopped_at_a_breakpoint(served, debugger):
    source = debugger.break_in_cell(PAUSING_CELL, line=2)
    msg_id = served.kernel.client.execute(PAUSING_CELL)
    thread_id = stopped_thread(debugger)
    try:
        # debugpy suspends every thread it traces; the server's is not one of them.
        async with connect(served, "legacy") as client:  # a new session, while stopped
            await asyncio.wait_for(client.send_ping(), 30)
            tools = await asyncio.wait_for(client.list_tools(), 30)
            assert [tool.name for tool in tools.tools] == ["add"]
        async with connect(served, "auto") as client:  # 2026-07-28: no ping, no session
            tools = await asyncio.wait_for(client.list_tools(), 30)
            assert [tool.name for tool in tools.tools] == ["add"]
    finally:
        debugger.clear_breakpoints(source)
        debugger.resume(thread_id)
    assert execute_reply(served, msg_id)["status"] == "ok"
