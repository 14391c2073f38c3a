"""Jupyter's Interrupt button (SIGINT to the kernel) stops a running tool, and only that.

``manager.interrupt_kernel()`` is what the notebook's button does. A tool interrupted this
way ends at once: the client gets a tool error saying so, the history and the monitor show
"interrupted", and the server and the kernel carry on. An Interrupt during a cell still
interrupts the cell; calls queued behind the cell keep waiting and run after it.
"""

from __future__ import annotations

import json
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import start_server
from tests.kernel.test_http_modern import MODERN, Modern
from tests.kernel.test_http_raw import Endpoint, Reply, wait_for_output
from tests.kernels import Kernel
from tests.schema import validate_reply
from tests.sources import ADD_BARE
from tests.waiting import wait_until

SETUP = (
    '''
import asyncio, tempfile, time
from pathlib import Path

@mcp.tool
def sleeper(mark: str) -> str:
    """Sleeps ten minutes in small steps, as a slow computation would."""
    Path(mark).touch()
    for _ in range(6000):
        time.sleep(0.1)
    return "slept"

@mcp.tool
def spinner(mark: str) -> int:
    """A pure Python loop that never ends by itself."""
    Path(mark).touch()
    n = 0
    while n >= 0:
        n += 1
    return n

@mcp.tool
async def waiter(mark: str) -> str:
    """Awaits ten minutes."""
    Path(mark).touch()
    await asyncio.sleep(600)
    return "waited"

@mcp.tool
async def async_sleeper(mark: str) -> str:
    """An async tool that blocks without awaiting, ten minutes."""
    Path(mark).touch()
    for _ in range(6000):
        time.sleep(0.1)
    return "slept"

@mcp.tool
async def async_spinner(mark: str) -> int:
    """An async tool whose pure Python loop never ends by itself, nor awaits."""
    Path(mark).touch()
    n = 0
    while n >= 0:
        n += 1
    return n

gate = asyncio.Event()

@mcp.tool
async def held(mark: str) -> str:
    """Waits until a cell opens the gate."""
    Path(mark).touch()
    await gate.wait()
    return "released"

'''
    + ADD_BARE
    + """
@mcp.resource_template("slow://{mark}")
def slow_read(mark: str) -> str:
    Path(tempfile.gettempdir(), mark).touch()
    time.sleep(600)
    return "read"
"""
)
BUSY_CELL = """
print("started", flush=True)
time.sleep(600)
"""
# An async cell: the kernel's loop, and the calls on it, run while it awaits.
GATE_CELL = """
gate.set()
print("started", flush=True)
while not Path({release!r}).exists():
    await asyncio.sleep(0.02)
"""


@pytest.fixture(scope="module")
def ep(kernel: Kernel) -> Endpoint:
    return Endpoint(start_server(kernel, SETUP))


@pytest.fixture(scope="module")
def session(ep: Endpoint) -> str:
    return ep.open_session()


@pytest.fixture(scope="module")
def pool():
    with ThreadPoolExecutor(4) as threads:
        yield threads


def post_call(pool, ep: Endpoint, session: str, name: str, **arguments) -> Future[Reply]:
    message = {"jsonrpc": "2.0", "id": ep.next_id(), "method": "tools/call"}
    message["params"] = {"name": name, "arguments": arguments}
    # The client waits a minute at most; an interrupt that does not work lets the tool run
    # on for ten.
    return pool.submit(ep.post, json.dumps(message).encode(), session=session)


def last_status(kernel: Kernel, target: str) -> str:
    return kernel.eval(f"[c.status for c in mcp.calls if c.target == {target!r}][-1]")


def assert_serving(ep: Endpoint, session: str) -> None:
    assert ep.call_tool(session, "add", a=2, b=3)["content"][0]["text"] == "5"
    assert ep.kernel.alive()
    assert ep.kernel.eval("6 * 7") == 42


@pytest.mark.parametrize("tool", ["sleeper", "spinner", "waiter", "async_sleeper", "async_spinner"])
def test_interrupt_stops_a_running_tool_and_the_server_goes_on(
    ep: Endpoint, session: str, pool, tmp_path: Path, tool: str
) -> None:
    mark = tmp_path / "started"
    reply = post_call(pool, ep, session, tool, mark=str(mark))
    wait_until(mark.exists, "the mark file")  # the tool runs now
    ep.kernel.manager.interrupt_kernel()
    answer = reply.result(timeout=60)
    assert answer.status == 200, answer.body[:300]
    result = answer.json()["result"]
    assert result["isError"] is True
    assert "Interrupted" in result["content"][0]["text"]
    assert last_status(ep.kernel, tool) == "interrupted"
    assert_serving(ep, session)


def test_interrupt_on_a_2026_call(ep: Endpoint, session: str, pool, tmp_path: Path) -> None:
    modern = Modern(ep.url, ep.token)
    mark = tmp_path / "started"
    message = modern.message("tools/call", {"name": "sleeper", "arguments": {"mark": str(mark)}})
    reply = pool.submit(modern.send, message)
    wait_until(mark.exists, "the mark file")
    ep.kernel.manager.interrupt_kernel()
    status, _, messages = reply.result(timeout=60)
    assert status == 200
    result = validate_reply("tools/call", messages[-1], MODERN)["result"]
    assert result["isError"] is True and "Interrupted" in result["content"][0]["text"]
    assert last_status(ep.kernel, "sleeper") == "interrupted"
    assert_serving(ep, session)


def test_an_interrupted_resource_read_is_an_error_reply(
    ep: Endpoint, session: str, pool, tmp_path: Path
) -> None:
    mark = Path(tempfile.gettempdir(), f"mcp-interrupt-{tmp_path.name}")
    message = {"jsonrpc": "2.0", "id": 77, "method": "resources/read"}
    message["params"] = {"uri": f"slow://{mark.name}"}
    reply = pool.submit(ep.post, json.dumps(message).encode(), session=session)
    try:
        wait_until(mark.exists, "the mark file")
        ep.kernel.manager.interrupt_kernel()
        body = reply.result(timeout=60).json()
    finally:
        mark.unlink(missing_ok=True)
    assert body["id"] == 77
    assert "Interrupted" in body["error"]["message"]
    assert last_status(ep.kernel, f"slow://{mark.name}") == "interrupted"
    assert_serving(ep, session)


def test_the_monitor_shows_the_interrupted_call(ep: Endpoint, session: str, tmp_path) -> None:
    with ThreadPoolExecutor(1) as threads:
        mark = tmp_path / "started"
        reply = post_call(threads, ep, session, "sleeper", mark=str(mark))
        wait_until(mark.exists, "the mark file")
        ep.kernel.manager.interrupt_kernel()
        reply.result(timeout=60)
    ep.kernel.run(
        "monitor = mcp.ui.monitor()\n"
        "call = [c for c in mcp.calls if c.target == 'sleeper'][-1]\n"
        "monitor.select(call.id)"
    )
    row = ep.kernel.eval("next(label for label, id in monitor.table.options if id == call.id)")
    assert "sleeper" in row and row.endswith("interrupted")
    assert "Interrupted from the notebook" in ep.kernel.eval("monitor.detail.value")


def test_an_interrupt_while_no_call_runs_changes_nothing(ep: Endpoint, session: str) -> None:
    for _ in range(3):
        ep.kernel.manager.interrupt_kernel()
    assert_serving(ep, session)


def test_an_interrupt_during_a_cell_stops_the_cell_and_queued_calls_wait(
    ep: Endpoint, session: str, pool, frontend, calls_feed
) -> None:
    kernel = ep.kernel
    # stop_on_error=False: an interrupted cell must not make the kernel abort the requests
    # this test sends next (ipykernel aborts what arrives while it clears its queue).
    busy = kernel.client.execute(BUSY_CELL, stop_on_error=False)
    wait_for_output(kernel, busy, "started")
    reply = post_call(pool, ep, session, "add", a=20, b=22)
    frontend.wait_for_call(calls_feed, "add", "behind")  # queued behind the cell
    kernel.manager.interrupt_kernel()
    while True:
        message = kernel.client.get_shell_msg(timeout=30)
        if message["parent_header"].get("msg_id") == busy:
            break
    assert message["content"]["status"] == "error"
    assert message["content"]["ename"] == "KeyboardInterrupt"
    # The queued call was not touched: it runs after the cell, and answers.
    answer = reply.result(timeout=60).json()["result"]
    assert (answer["isError"], answer["content"][0]["text"]) == (False, "42")
    assert last_status(kernel, "add") == "done"
    assert_serving(ep, session)


def test_a_cell_interrupted_beside_a_running_async_tool_leaves_the_tool_running(
    ep: Endpoint, session: str, pool, tmp_path: Path
) -> None:
    """The Interrupt goes to what the kernel runs: the cell first; the tool after it."""
    kernel = ep.kernel
    mark = tmp_path / "started"
    reply = post_call(pool, ep, session, "waiter", mark=str(mark))
    wait_until(mark.exists, "the mark file")
    # stop_on_error=False: an interrupted cell must not make the kernel abort the requests
    # this test sends next (ipykernel aborts what arrives while it clears its queue).
    busy = kernel.client.execute(BUSY_CELL, stop_on_error=False)
    wait_for_output(kernel, busy, "started")
    kernel.manager.interrupt_kernel()
    while True:
        message = kernel.client.get_shell_msg(timeout=30)
        if message["parent_header"].get("msg_id") == busy:
            break
    assert message["content"]["ename"] == "KeyboardInterrupt"
    assert not reply.done()
    assert last_status(kernel, "waiter") == "running"
    kernel.manager.interrupt_kernel()  # no cell now: the tool's turn
    result = reply.result(timeout=60).json()["result"]
    assert result["isError"] is True and "Interrupted" in result["content"][0]["text"]
    assert last_status(kernel, "waiter") == "interrupted"
    assert_serving(ep, session)


def wait_for_reply(kernel: Kernel, msg_id: str) -> dict:
    while True:
        message = kernel.client.get_shell_msg(timeout=30)
        if message["parent_header"].get("msg_id") == msg_id:
            return message


def test_tools_that_end_and_start_during_a_cell_leave_idle_interrupts_harmless(
    ep: Endpoint, session: str, pool, tmp_path: Path
) -> None:
    """The kernel saves and restores the SIGINT handler around each cell: calls that end
    and start during a cell must not leave it Python's default between cells, where an
    Interrupt would raise KeyboardInterrupt in the kernel's loop and end the kernel."""
    kernel = ep.kernel
    mark, release = tmp_path / "started", tmp_path / "release"
    first = post_call(pool, ep, session, "held", mark=str(mark))
    wait_until(mark.exists, "the mark file")  # an async tool runs
    cell = kernel.client.execute(GATE_CELL.format(release=str(release)))
    wait_for_output(kernel, cell, "started")
    # The tool ends during the cell, and another runs during it.
    assert first.result(timeout=60).json()["result"]["content"][0]["text"] == "released"
    assert ep.call_tool(session, "add", a=1, b=2)["content"][0]["text"] == "3"
    release.touch()
    assert wait_for_reply(kernel, cell)["content"]["status"] == "ok"
    assert_serving(ep, session)  # a tool after the cell, and a cell
    for _ in range(3):
        kernel.manager.interrupt_kernel()  # nothing runs
    assert_serving(ep, session)


def test_a_tool_that_starts_during_an_async_cell_and_outlives_it_can_be_interrupted(
    ep: Endpoint, session: str, pool, tmp_path: Path
) -> None:
    kernel = ep.kernel
    mark, release = tmp_path / "started", tmp_path / "release"
    cell = kernel.client.execute(GATE_CELL.format(release=str(release)))
    wait_for_output(kernel, cell, "started")
    reply = post_call(pool, ep, session, "waiter", mark=str(mark))
    wait_until(mark.exists, "the mark file")  # the tool started during the cell
    release.touch()
    assert wait_for_reply(kernel, cell)["content"]["status"] == "ok"
    assert last_status(kernel, "waiter") == "running"
    kernel.manager.interrupt_kernel()  # the cell is over: the tool's turn
    result = reply.result(timeout=60).json()["result"]
    assert result["isError"] is True and "Interrupted" in result["content"][0]["text"]
    assert last_status(kernel, "waiter") == "interrupted"
    assert_serving(ep, session)


def test_the_kernel_saving_and_restoring_around_cells_never_leaves_a_raising_handler() -> None:
    """What ipykernel does around a cell (``pre_handler_hook``/``post_handler_hook``), in the
    reviewer's sequence: an async tool ends during a cell and another starts during it;
    after the cell and a later tool, SIGINT while nothing runs must not raise (in the
    kernel's loop, a KeyboardInterrupt ends the kernel)."""
    import asyncio
    import signal

    from mcp_notebook.kernel import capture
    from mcp_notebook.protocol import CallRecord

    def call(work):
        return capture._begin(work, CallRecord("tools/call", "t", {}, "c"))

    async def scenario() -> object:
        gate = asyncio.Event()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # ipykernel, between cells
        first = call(gate.wait)  # an async tool runs
        saved = signal.signal(signal.SIGINT, signal.default_int_handler)  # a cell starts
        gate.set()
        await first  # the tool ends during the cell
        call(lambda: 1)  # another runs during the cell
        signal.signal(signal.SIGINT, saved)  # the cell ends
        call(lambda: 2)  # a later tool
        return signal.getsignal(signal.SIGINT)

    before = signal.getsignal(signal.SIGINT)
    loop = asyncio.new_event_loop()
    try:
        handler = loop.run_until_complete(scenario())
    finally:
        loop.close()
        signal.signal(signal.SIGINT, before)
    assert callable(handler)
    try:
        handler(signal.SIGINT, sys._getframe())  # nothing runs: nothing happens
    except KeyboardInterrupt:
        pytest.fail("SIGINT while no call or cell runs raised KeyboardInterrupt")
