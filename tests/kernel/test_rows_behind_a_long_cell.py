"""A call that waits behind a long cell shows as waiting while the cell runs, in the MCP
panel's feed and in a monitor, although something changed just before the cell started.

With Run All, a change made on the kernel's loop between two cells (a registration, a
queued call that ran, a setting) puts the next update of the feed and of the monitors on
that loop; the next cell, long, then holds the loop, and nothing queued there runs before
it ends. Here the change is made as the first cell ends (an IPython ``post_execute`` hook,
on the kernel's loop, no cell running) and the long cell is the next request, sent with
it: the updates are due on the loop when the long cell starts, every time. The updates'
``interval`` is raised so that they are still due there however slowly the kernel starts
the next cell on a loaded machine.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import connect, start_server
from tests.kernel.test_http_raw import wait_for_output
from tests.sources import ADD_BARE

SLOW_UPDATES = "mcp.ui.interval = mcp.ui.feed.batcher.interval = 2.0"
# The first cell registers a tool and switches tracing on; the feed and the monitor send
# that at once (from a timer thread: a cell runs). As the cell ends, within their interval,
# another tool and tracing again: on the kernel's loop, with no cell running.
AS_THE_CELL_ENDS = """
import time as _time

@mcp.tool
def first() -> str:
    return "first"

mcp.ui.set_trace(True)
while mcp.ui.feed.batcher._armed or mcp.ui._armed:
    _time.sleep(0.01)

def _as_the_cell_ends():
    get_ipython().events.unregister("post_execute", _as_the_cell_ends)

    @mcp.tool
    def fresh() -> str:
        return "fresh"

    mcp.ui.set_trace(True)

get_ipython().events.register("post_execute", _as_the_cell_ends)
"""
LONG_CELL = """
import os as _os, time as _time
print("holding the kernel", flush=True)
_deadline = _time.monotonic() + 120  # bounds the hold if the test fails
while not _os.path.exists({release!r}) and _time.monotonic() < _deadline:
    _time.sleep(0.02)
"""


@pytest.fixture(scope="module")
def served(kernel, frontend):
    served = start_server(kernel, ADD_BARE)
    kernel.run(SLOW_UPDATES)
    return served


@pytest.fixture(scope="module")
def table(served, frontend):
    """The call table of a monitor opened with %mcp monitor."""
    return frontend.children(frontend.open_monitor(served.kernel))[4]


async def test_a_call_behind_a_cell_that_follows_a_change_shows_queued_while_it_runs(
    served, frontend, calls_feed, table, tmp_path: Path
):
    kernel = served.kernel
    number = kernel.eval("get_ipython().execution_count")  # the first cell's
    release = tmp_path / "release"
    first = kernel.client.execute(AS_THE_CELL_ENDS)
    long_cell = kernel.client.execute(LONG_CELL.format(release=str(release)))
    try:
        wait_for_output(kernel, long_cell, "holding the kernel")
        async with connect(served) as client:
            call = asyncio.ensure_future(client.call_tool("add", {"a": 2, "b": 3}))
            row = await asyncio.to_thread(frontend.wait_for_call, calls_feed, "add", "behind")
            queued = f"queued behind cell [{number + 1}]"
            assert queued in row["label"]
            await frontend.until(lambda: any(r.endswith(queued) for r in frontend.labels(table)))
            assert not call.done()  # all of it while the long cell runs
            release.touch()
            result = await asyncio.wait_for(call, 30)
        assert result.content[0].text == "5"
    finally:
        release.touch()
    replies = {kernel.client.get_shell_msg(timeout=60)["parent_header"]["msg_id"] for _ in "12"}
    assert replies == {first, long_cell}
    # What changed between the cells went out too.
    registered = [m["registrations"] for m in frontend.feed(calls_feed) if "registrations" in m]
    assert "fresh" in {r["name"] for r in registered[-1]}
    await frontend.until(lambda: frontend.labels(table)[0].endswith("done"))
