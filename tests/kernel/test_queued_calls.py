"""A call waiting behind a running cell says so: progress to the client, a row in the monitor.

A cell holds the kernel (it polls for a file the test creates) while clients call a tool:
the official SDK client with a progress callback (both eras, directly and through the
bridge) and a raw HTTP client reading the SSE response. The monitor is read the way a front
end sees it (tests/kernel/frontend.py).
"""

from __future__ import annotations

import asyncio
import http.client
import itertools
import json
from pathlib import Path

import pytest
from mcp.client import Client

from tests.conftest import MODES, connect, start_server
from tests.kernel.test_http_raw import PROTOCOL, Endpoint, next_sse_event, wait_for_output
from tests.schema import validate_notification, validate_reply
from tests.sdk_scenarios import Progress
from tests.sources import ADD
from tests.stdio import module_params

SETUP = (
    """
from mcp_notebook import Context

"""
    + ADD
    + '''
@mcp.tool
def step(ctx: Context) -> str:
    """Report progress of its own, from 0 (below what the wait's notices said)."""
    for n in range(3):
        ctx.report_progress(n, total=2, message="stepped" if n == 2 else f"step {n}")
    return "done stepping"
'''
)

HOLD = """
import os as _os, time as _time
print("holding the kernel", flush=True)
_deadline = _time.monotonic() + 120  # bounds the hold if the test fails
while not _os.path.exists({release!r}) and _time.monotonic() < _deadline:
    _time.sleep(0.02)
"""


class HeldKernel:
    """A cell that holds the kernel's main thread until :meth:`release`."""

    def __init__(self, kernel, folder: Path) -> None:
        self.kernel = kernel
        self.path = folder / "release"
        self.number = kernel.eval("get_ipython().execution_count")  # the next cell's
        self.msg_id = kernel.client.execute(HOLD.format(release=str(self.path)))
        wait_for_output(kernel, self.msg_id, "holding the kernel")

    def release(self) -> None:
        self.path.touch()

    def finish(self) -> None:
        self.release()
        # The kernel runs requests in order: this one is answered once the cell ended.
        assert self.kernel.eval(f"_os.path.exists({str(self.path)!r})") is True


@pytest.fixture(scope="module")
def served(kernel, frontend):
    return start_server(kernel, SETUP, "%mcp start --port 0 --name queued-calls")


@pytest.fixture(scope="module")
def table(served, frontend):
    """The call table of a monitor opened with %mcp monitor."""
    return frontend.children(frontend.open_monitor(served.kernel))[4]


@pytest.fixture
def held(served, tmp_path):
    cell = HeldKernel(served.kernel, tmp_path)
    yield cell
    cell.finish()


@MODES
async def test_a_call_behind_a_running_cell_reports_progress_then_runs(
    served, frontend, table, held, mode
):
    progress = Progress()
    async with connect(served, mode) as client:
        call = asyncio.ensure_future(
            client.call_tool("add", {"a": 2, "b": 3}, progress_callback=progress)
        )
        await asyncio.wait_for(progress.arrived.wait(), 30)
        assert not call.done()  # the cell still holds the kernel
        assert progress.seen[0][2] == f"waiting for the running cell [{held.number}]"
        # The monitor shows it while the cell runs (rendered off the busy kernel loop).
        queued = f"queued behind cell [{held.number}]"
        await frontend.until(lambda: any(r.endswith(queued) for r in frontend.labels(table)))
        held.release()
        result = await asyncio.wait_for(call, 30)
    assert result.content[0].text == "5"
    assert all(message == progress.seen[0][2] for _, _, message in progress.seen)
    record = served.kernel.eval("[(c.status, c.behind) for c in mcp.calls][-1]")
    assert record == ("done", f"cell [{held.number}]")
    await frontend.until(lambda: frontend.labels(table)[0].endswith("done"))


@MODES
async def test_a_context_tool_reports_its_own_progress_after_the_wait(served, held, mode):
    progress = Progress()
    async with connect(served, mode) as client:
        call = asyncio.ensure_future(client.call_tool("step", {}, progress_callback=progress))
        await asyncio.wait_for(progress.arrived.wait(), 30)
        held.release()
        result = await asyncio.wait_for(call, 30)
    assert result.content[0].text == "done stepping"
    messages = [message for _, _, message in progress.seen]
    assert messages[0] == f"waiting for the running cell [{held.number}]"
    assert messages[-3:] == ["step 0", "step 1", "stepped"]  # the tool's own, after the wait's
    # One token, two senders: its progress still increases at every notification, and
    # the tool's fractions are what it said (0 of 2 to 2 of 2, to a thousandth).
    values = [value for value, _, _ in progress.seen]
    assert all(a < b for a, b in itertools.pairwise(values)), values
    assert all(total is None for _, total, _ in progress.seen[:-3])  # the wait's notices
    fractions = [value / total for value, total, _ in progress.seen[-3:]]
    assert fractions == pytest.approx([0, 0.5, 1], abs=1e-3) and fractions[-1] == 1


@MODES
async def test_a_call_through_the_bridge_hears_the_wait_too(served, held, mode):
    progress = Progress()
    async with Client(module_params("bridge", "queued-calls"), mode=mode) as client:
        call = asyncio.ensure_future(client.call_tool("add", {"a": 4}, progress_callback=progress))
        await asyncio.wait_for(progress.arrived.wait(), 60)
        assert not call.done()
        assert progress.seen[0][2] == f"waiting for the running cell [{held.number}]"
        held.release()
        result = await asyncio.wait_for(call, 30)
    assert result.content[0].text == "5"


def tool_call(request_id: int, name: str, arguments: dict, meta: dict | None = None) -> dict:
    params = {"name": name, "arguments": arguments, **({"_meta": meta} if meta else {})}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def post(ep: Endpoint, session: str, message: dict) -> http.client.HTTPResponse:
    connection = ep.connect()
    connection.request("POST", ep.path, json.dumps(message), ep.headers(session=session))
    return connection.getresponse()


def test_a_raw_sse_client_gets_progress_first_and_no_token_means_no_progress(served, held):
    ep = Endpoint(served)
    session = ep.open_session()
    silent = tool_call(1, "add", {"a": 1})
    told = tool_call(2, "add", {"a": 2}, {"progressToken": "q"})
    # The call without a token waits first; its timer fires before the second call's.
    first_connection = ep.connect()
    first_connection.request("POST", ep.path, json.dumps(silent), ep.headers(session=session))
    second = post(ep, session, told)
    assert second.headers["Content-Type"].startswith("text/event-stream")
    notice = json.loads(next_sse_event(second)["data"])
    validate_notification(notice, PROTOCOL)
    assert notice["params"]["progressToken"] == "q"
    assert notice["params"]["message"] == f"waiting for the running cell [{held.number}]"
    held.release()
    event = json.loads(next_sse_event(second)["data"])
    while event.get("method") == "notifications/progress":  # a repeat, if the host is slow
        event = json.loads(next_sse_event(second)["data"])
    assert validate_reply("tools/call", event, PROTOCOL)["result"]["content"][0]["text"] == "3"
    first = first_connection.getresponse()
    assert first.headers["Content-Type"] == "application/json"  # nothing was streamed
    assert json.loads(first.read())["result"]["content"][0]["text"] == "2"
    first_connection.close()


def test_a_json_only_client_hears_the_wait_where_a_tools_progress_goes(served, tmp_path):
    """No SSE on the POST: the notice goes on the session's GET stream, as a Context
    tool's progress would, and the call's answer is plain JSON."""
    ep = Endpoint(served)
    session = ep.open_session()
    listener = ep.connect()
    listener.request(
        "GET", ep.path, headers=ep.headers(session=session, accept="text/event-stream")
    )
    stream = listener.getresponse()  # once the headers are here, the stream is registered
    assert stream.status == 200
    held = HeldKernel(served.kernel, tmp_path)
    try:
        caller = ep.connect()
        message = tool_call(3, "add", {"a": 5}, {"progressToken": "json-only"})
        caller.request(
            "POST",
            ep.path,
            json.dumps(message),
            ep.headers(session=session, accept="application/json"),
        )
        notice = json.loads(next_sse_event(stream)["data"])
        validate_notification(notice, PROTOCOL)
        assert notice["params"]["progressToken"] == "json-only"
        assert notice["params"]["message"] == f"waiting for the running cell [{held.number}]"
        held.release()
        answer = caller.getresponse()
        assert answer.headers["Content-Type"] == "application/json"
        assert json.loads(answer.read())["result"]["content"][0]["text"] == "6"
        caller.close()
    finally:
        held.finish()
        listener.close()
