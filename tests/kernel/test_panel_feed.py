"""The MCP panel's feed in a real kernel, read as the extension reads it: a front end opens a
comm to ``mcp_notebook.panel`` (tests/kernel/frontend.py speaks the Jupyter protocol), the
official SDK client calls the notebook's server. A burst of calls arrives as a few batched
messages; a confirmation is approved from the panel's comm and the client gets its result;
hostile messages are refused without a kernel error; ``%mcp monitor`` asks the front end
that ran it to show its panel. Without a kernel: tests/unit/ui/test_panelfeed.py."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.conftest import connect, start_server
from tests.kernel.frontend import PANEL, Frontend
from tests.sources import ADD_BARE

SETUP = (
    ADD_BARE
    + r"""
@mcp.tool(confirm=True)
def drop_rows(table: str) -> str:
    return f"dropped {table}"
"""
)


@pytest.fixture(scope="module")
def served(kernel, frontend):
    return start_server(kernel, SETUP)


async def open_panel(front: Frontend) -> str:
    comm_id = front.open_comm(PANEL, {})
    await front.until(lambda: front.feed(comm_id, "snapshot"))
    return comm_id


async def answer(front: Frontend, comm_id: str, request: int) -> dict:
    def found():
        return [m for m in front.feed(comm_id, "answer") if m["request"] == request]

    (reply,) = await front.until(found)
    return reply


async def test_a_burst_of_calls_arrives_in_a_few_batched_messages(served, frontend):
    panel = await open_panel(frontend)
    (snapshot,) = frontend.feed(panel, "snapshot")
    assert snapshot["state"]["running"] is True and snapshot["state"]["url"] == served.url
    assert {r["name"] for r in snapshot["registrations"]} == {"add", "drop_rows"}
    before = len(frontend.feed(panel, "update"))
    started = time.monotonic()
    async with connect(served) as client:
        calls = [client.call_tool("add", {"a": n, "b": 1}) for n in range(200)]
        results = await asyncio.gather(*calls)
    assert [r.structured_content["result"] for r in results] == [n + 1 for n in range(200)]

    def all_done():
        done = [r for r in frontend.rows(panel).values() if r["target"] == "add"]
        return len(done) == 200 and all(r["status"] == "done" for r in done)

    await frontend.until(all_done)
    elapsed = time.monotonic() - started
    updates = len(frontend.feed(panel, "update")) - before
    # 200 calls make 600 status changes; at most one message per 0.1 s (and a state tick
    # a second) whatever the rate.
    assert updates <= elapsed / 0.1 + elapsed + 2, (updates, elapsed)
    assert updates < 200


async def test_approve_from_the_panel_gives_the_client_its_result(served, frontend):
    panel = await open_panel(frontend)
    async with connect(served) as client:
        call = asyncio.ensure_future(client.call_tool("drop_rows", {"table": "orders"}))

        def waiting():
            pending = [m.get("pending") for m in frontend.feed(panel) if "pending" in m]
            return pending and pending[-1]

        (card,) = await frontend.until(waiting)
        assert card["tool"] == "drop_rows" and '"orders"' in card["arguments"]
        frontend.send(panel, {"request": 7, "op": "decide", "call": card["id"], "approve": True,
                              "where": "notification", "who": "Ada",
                              "arguments": {"table": "archive"}})  # fmt: skip
        reply = await answer(frontend, panel, 7)
        assert reply["ok"] is True
        result = await asyncio.wait_for(call, 30)
        assert result.content[0].text == "dropped archive"
    await frontend.until(lambda: frontend.rows(panel)[card["id"]]["status"] == "done")
    assert frontend.rows(panel)[card["id"]]["decided"].startswith(
        "approved in the notification by Ada after "
    )
    frontend.send(panel, {"request": 8, "op": "decide", "call": card["id"], "approve": False,
                          "where": "panel"})  # fmt: skip
    late = await answer(frontend, panel, 8)
    assert late["ok"] is False and late["decided"].startswith("approved in the notification")


async def test_hostile_panel_messages_are_refused_and_the_kernel_keeps_serving(
    served, frontend, kernel
):
    panel = await open_panel(frontend)
    for n, data in enumerate(
        [{"op": "detail", "call": "x"}, {"op": "decide", "call": 10**40}, {"op": 3}], 1
    ):
        frontend.send(panel, {"request": n, **data})
        reply = await answer(frontend, panel, n)
        assert reply["ok"] is False and reply["error"]
    frontend.send(panel, {"no": "request"})
    frontend.send(panel, {"request": 9, "op": "detail", "call": 1, "pad": "x" * 2_000_000})
    assert (await answer(frontend, panel, 9))["ok"] is False
    assert kernel.eval("1 + 1") == 2
    async with connect(served) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}


async def test_a_panel_is_answered_after_the_subshell_it_last_used_is_deleted(served, frontend):
    # JupyterLab sends a comm's messages on a subshell and deletes a per-comm subshell when
    # its comm closes; the kernel's answer on that subshell must not bind the panel to it.
    panel = await open_panel(frontend)
    subshell = frontend.subshell(served.kernel)
    frontend.send(panel, {"request": 21, "op": "snapshot"}, subshell=subshell)
    assert (await answer(frontend, panel, 21))["ok"] is True
    frontend.subshell(served.kernel, "delete", subshell)
    frontend.send(panel, {"request": 22, "op": "snapshot"})
    assert (await answer(frontend, panel, 22))["ok"] is True


def run_from(front: Frontend, code: str) -> None:
    """Execute ``code`` as a request from ``front`` (its session is the cell's sender)."""
    front._send("execute_request", {"code": code, "silent": False, "store_history": False,
                                    "user_expressions": {}, "allow_stdin": False})  # fmt: skip


async def test_mcp_monitor_opens_the_panel_of_the_front_end_that_ran_it(served, frontend, kernel):
    panel = await open_panel(frontend)
    other = Frontend(kernel)
    try:
        other_panel = await open_panel(other)
        run_from(frontend, "%mcp monitor")
        await frontend.until(lambda: frontend.feed(panel, "open"))
        kernel.eval("1")  # the cell ran: nothing was sent to the other tab
        assert other.feed(other_panel, "open") == []
    finally:
        other.close()
