"""The kernel's own debugger (debugpy in ipykernel), driven as JupyterLab drives it.

An official SDK client calls tools while the debugger is attached (tests/kernel/debugging.py
speaks the Debug Adapter Protocol over the kernel's control channel); a second front end
reads the monitor as a browser would (tests/kernel/frontend.py).
"""

from __future__ import annotations

import asyncio
import queue

import pytest

from mcp_notebook.ui.monitor import UNPAUSE
from tests.conftest import connect, start_server
from tests.kernel.debugging import Debugger
from tests.kernel.test_tasks import Tasks
from tests.sdk_scenarios import Progress
from tests.sources import ADD
from tests.waiting import wait_until

SETUP = ADD

PAUSING_CELL = """def paused_here(n):
    doubled = n * 2
    return doubled

paused_here(21)
"""


# A tool defined in a cell: a person's breakpoints in this cell's file are hit by calls.
TOOL_CELL = '''@mcp.tool
def scaled(n: int, factor: int = 2) -> int:
    """Scale n."""
    product = n * factor
    return product
'''
PRODUCT_LINE = 4  # the tool's first line: `product = n * factor`


@pytest.fixture(scope="module")
def served(kernel, frontend):
    served = start_server(kernel, SETUP)
    served.kernel.run(TOOL_CELL)
    return served


@pytest.fixture(scope="module")
def table(served, frontend):
    """The call table of a monitor opened with %mcp monitor."""
    return frontend.children(frontend.open_monitor(served.kernel))[4]


@pytest.fixture(scope="module")
def debugger(served):
    """Attached once per kernel, as a front end stays attached (ipykernel answers no
    second ``initialize`` after a ``disconnect``)."""
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
            assert [tool.name for tool in tools.tools] == ["add", "scaled"]
        async with connect(served, "auto") as client:  # 2026-07-28: no ping, no session
            tools = await asyncio.wait_for(client.list_tools(), 30)
            assert [tool.name for tool in tools.tools] == ["add", "scaled"]
    finally:
        debugger.clear_breakpoints(source)
        debugger.resume(thread_id)
    assert execute_reply(served, msg_id)["status"] == "ok"


def top_frame(debugger: Debugger, thread_id: int) -> dict:
    trace = debugger.request("stackTrace", {"threadId": thread_id})
    return trace["body"]["stackFrames"][0]


def scope_variables(debugger: Debugger, frame_id: int, scope: str) -> tuple[int, dict[str, str]]:
    scopes = debugger.request("scopes", {"frameId": frame_id})["body"]["scopes"]
    (reference,) = [s["variablesReference"] for s in scopes if s["name"] == scope]
    found = debugger.request("variables", {"variablesReference": reference})["body"]
    return reference, {v["name"]: v["value"] for v in found["variables"]}


async def test_a_breakpoint_in_a_tools_cell_stops_the_agents_call(served, debugger):
    """Set in the cell that defines the tool, as in the Debugger panel; hit by an agent."""
    source = debugger.break_in_cell(TOOL_CELL, line=PRODUCT_LINE)
    try:
        async with connect(served, "legacy") as agent:
            call = asyncio.ensure_future(agent.call_tool("scaled", {"n": 21}))
            thread_id = await asyncio.to_thread(stopped_thread, debugger)
            frame = top_frame(debugger, thread_id)
            assert (frame["name"], frame["line"]) == ("scaled", PRODUCT_LINE)
            assert frame["source"]["path"] == source
            reference, local = scope_variables(debugger, frame["id"], "Locals")
            assert (local["n"], local["factor"]) == ("21", "2")  # what the model sent
            _, notebook = scope_variables(debugger, frame["id"], "Globals")
            assert notebook["mcp"].startswith("<mcp ")  # the notebook's globals
            async with connect(served, "legacy") as other:  # the control plane answers
                await asyncio.wait_for(other.send_ping(), 30)
            assert not call.done()
            # Step, inspect, change: the tool goes on with the value set in the debugger.
            changed = debugger.request(
                "setVariable", {"variablesReference": reference, "name": "n", "value": "50"}
            )
            assert changed["success"], changed
            debugger.resume(thread_id)
            result = await asyncio.wait_for(call, 60)
        assert result.content[0].text == "100"
    finally:
        debugger.clear_breakpoints(source)


async def test_mcp_break_when_stops_only_the_matching_call(served, debugger, frontend, table):
    served.kernel.run("%mcp break scaled --when n > 10 and factor == 2")
    progress = Progress()
    async with connect(served, "legacy") as agent:
        small = await asyncio.wait_for(agent.call_tool("scaled", {"n": 3}), 30)
        assert small.content[0].text == "6"  # no match: it ran through
        call = asyncio.ensure_future(
            agent.call_tool("scaled", {"n": 20}, progress_callback=progress)
        )
        thread_id = await asyncio.to_thread(stopped_thread, debugger)
        frame = top_frame(debugger, thread_id)
        assert (frame["name"], frame["line"]) == ("scaled", PRODUCT_LINE)  # its first line
        # The agent hears why it waits; the monitor shows the paused call and its arguments.
        await asyncio.wait_for(progress.arrived.wait(), 30)
        assert progress.messages[0] == "paused at a breakpoint in scaled"
        await frontend.until(
            lambda: any(
                '{"n":20}' in row and row.endswith("paused in the debugger")
                for row in frontend.labels(table)
            )
        )
        async with connect(served, "legacy") as other:
            await asyncio.wait_for(other.send_ping(), 30)
        assert not call.done()
        debugger.resume(thread_id)
        result = await asyncio.wait_for(call, 60)
        assert result.content[0].text == "40"
        # Used up: the next matching call runs through.
        again = await asyncio.wait_for(agent.call_tool("scaled", {"n": 30}), 30)
        assert again.content[0].text == "60"
    assert served.kernel.eval("[c.paused for c in mcp.calls][-3:]") == [False] * 3
    await frontend.until(lambda: frontend.labels(table)[1].endswith("done"))


async def test_a_quoted_when_is_the_condition_it_quotes(served, debugger):
    """`--when "n > 10"`, quoted as a shell wants it, is not the string (always true)."""
    _, said = served.kernel.run('%mcp break scaled --when "n > 10"')
    assert said.startswith("The next call of scaled where n > 10 stops")
    async with connect(served, "legacy") as agent:
        small = asyncio.ensure_future(agent.call_tool("scaled", {"n": 3}))
        done, _ = await asyncio.wait([small], timeout=20)  # within the client's 30 s
        if not done:  # stopped in the debugger: free the kernel for what follows
            debugger.resume(await asyncio.to_thread(stopped_thread, debugger))
            raise AssertionError("a call whose --when is false stopped in the debugger")
        assert small.result().content[0].text == "6"  # ran through
        assert served.kernel.run("print(6 * 7)")[1] == "42\n"  # the kernel answers cells
        call = asyncio.ensure_future(agent.call_tool("scaled", {"n": 20}))
        debugger.resume(await asyncio.to_thread(stopped_thread, debugger))
        assert (await asyncio.wait_for(call, 60)).content[0].text == "40"


def test_a_paused_call_is_a_task_for_a_task_capable_client(served, debugger):
    served.kernel.run("%mcp break scaled")
    tasks = Tasks(served.url, served.token)  # 2026-07-28, declaring the tasks extension
    created = tasks.result("tools/call", {"name": "scaled", "arguments": {"n": 5}})
    assert created["resultType"] == "task"  # at once: a person holds the call
    thread_id = stopped_thread(debugger)
    try:
        wait_until(
            lambda: (
                tasks.result("tasks/get", {"taskId": created["taskId"]}).get("statusMessage")
                == "paused at a breakpoint in scaled"
            ),
            "the task says why it waits",
        )
        assert tasks.result("tasks/get", {"taskId": created["taskId"]})["status"] == "working"
    finally:
        debugger.resume(thread_id)
    done = tasks.until_terminal(created["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "10"


def test_mcp_break_checks_its_input(served):
    for line, problem in (
        ("%mcp break nope", "no tool 'nope'"),
        ("%mcp break scaled --when n >", "is not an expression"),
        ("%mcp unbreak scaled", "no break on 'scaled'"),
    ):
        reply, _ = served.kernel.try_run(line)
        assert reply["content"]["status"] == "error"
        assert problem in reply["content"]["evalue"]
    _, said = served.kernel.run("%mcp break scaled\n%mcp unbreak")
    assert "No break on scaled now." in said


async def test_the_monitors_pause_button_stops_the_next_call_of_any_tool(
    served, debugger, frontend, table
):
    (button,) = frontend.find("Button", "mcp-pause-next")  # the monitor of `table`
    frontend.click(button)
    # A debugger is attached: the button says the next call pauses, nothing more.
    await frontend.until(lambda: frontend.state(button)["description"] == UNPAUSE)
    async with connect(served, "legacy") as agent:
        call = asyncio.ensure_future(agent.call_tool("add", {"a": 1}))
        thread_id = await asyncio.to_thread(stopped_thread, debugger)
        frame = top_frame(debugger, thread_id)
        assert frame["name"] == "add"
        debugger.resume(thread_id)
        result = await asyncio.wait_for(call, 60)
    assert result.content[0].text == "2"
    # Used up: the button offers to pause again.
    await frontend.until(lambda: frontend.state(button)["description"] == "Pause next call")


# An async tool: while one call awaits, the kernel's loop runs the next call of the same tool.
ASYNC_CELL = '''import asyncio
gate = asyncio.Event()

@mcp.tool
async def relay(n: int) -> int:
    """Wait for the next call, or let the waiting one go."""
    first = n
    if n == 1:
        await gate.wait()
    else:
        gate.set()
    return first
'''


async def test_a_break_on_an_async_tool_stops_one_call_not_the_ones_made_while_it_runs(
    served, debugger
):
    served.kernel.run(ASYNC_CELL)
    served.kernel.run("%mcp break relay")
    async with connect(served, "legacy") as agent:
        waiting = asyncio.ensure_future(agent.call_tool("relay", {"n": 1}))
        debugger.resume(await asyncio.to_thread(stopped_thread, debugger))
        # The break is used up: a call made while the first one awaits runs through.
        opener = asyncio.ensure_future(agent.call_tool("relay", {"n": 2}))
        try:
            results = await asyncio.wait_for(asyncio.gather(waiting, opener), 60)
        except Exception as exc:  # the SDK's read timeout, or ours
            debugger.resume(stopped_thread(debugger))  # free the kernel for what follows
            raise AssertionError(f"a call stopped at the used-up break: {exc!r}") from None
    assert [r.content[0].text for r in results] == ["1", "2"]
