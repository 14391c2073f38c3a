"""`%mcp break` when no debugger is listening: before a front end attached the kernel's
debugger, and after it detached (debugpy still reports a client then). The break says
so, a matching call runs through with a warning in its output, and the break stays."""

from __future__ import annotations

import asyncio

from mcp_notebook.ui.monitor import PAUSE, UNPAUSE_DEAF
from tests.conftest import connect, start_server
from tests.kernel.debugging import Debugger
from tests.kernel.test_debugger import SETUP, TOOL_CELL

NOT_LISTENING = "No debugger is listening to this kernel"


async def runs_through_and_keeps_the_break(served) -> None:
    async with connect(served, "legacy") as agent:
        result = await asyncio.wait_for(agent.call_tool("scaled", {"n": 21}), 30)
    assert result.content[0].text == "42"
    output = served.kernel.eval("''.join(o.get('text', '') for o in mcp.calls[-1].output)")
    assert "%mcp break scaled: no debugger is" in output  # the call's record says why it ran on
    assert served.kernel.eval(
        "__import__('mcp_notebook.kernel.breaks').kernel.breaks.BREAKS.wanted"
    ) == {"scaled": "n > 20"}


async def test_the_monitors_pause_says_when_no_debugger_listens(kernel, frontend):
    """The monitor's Pause next call said "Next call pauses" with no debugger to stop in,
    and the next call then ran on: the button now says it waits for a debugger."""
    served = start_server(kernel, SETUP)
    kernel.run(TOOL_CELL)
    frontend.open_monitor(served.kernel)
    (button,) = frontend.find("Button", "mcp-pause-next")
    frontend.click(button)
    await frontend.until(lambda: frontend.state(button)["description"] == UNPAUSE_DEAF)
    frontend.click(button)
    await frontend.until(lambda: frontend.state(button)["description"] == PAUSE)


async def test_a_break_says_when_no_debugger_listens_before_and_after_one_did(kernel):
    served = start_server(kernel, SETUP)
    kernel.run(TOOL_CELL)
    _, said = kernel.run("%mcp break scaled --when n > 20")
    assert said.startswith(NOT_LISTENING)
    assert "the next call of scaled where n > 20 stops" in said
    await runs_through_and_keeps_the_break(served)

    debugger = Debugger(kernel)
    debugger.start()
    _, said = kernel.run("%mcp break scaled --when n > 20")
    assert NOT_LISTENING not in said and "stops at its first line" in said
    debugger.stop()  # the Debugger panel closed: debugpy's client is still connected
    assert kernel.eval("__import__('debugpy').is_client_connected()") is True

    _, said = kernel.run("%mcp break scaled --when n > 20")
    assert said.startswith(NOT_LISTENING)
    await runs_through_and_keeps_the_break(served)
