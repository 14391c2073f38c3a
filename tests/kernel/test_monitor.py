"""The call monitor and debugging agent calls, in a real kernel driven by the SDK client.

The monitor is read the way a browser would: from the widget state the kernel sends
(``Frontend``); selecting a call is a comm message, as a click would be.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable

import pytest

from mcp_notebook.ui import calltable
from tests.conftest import MODES, connect, start_server
from tests.kernel.frontend import Frontend
from tests.kernels import KernelError
from tests.sources import ADD_BARE

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

SETUP = (
    r"""
import asyncio, base64, sys, warnings
from IPython.display import HTML, display
from mcp_notebook import Image

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

@mcp.tool
def report(region: str, rows: int = 3) -> dict:
    print(f"counting {region}")
    print("a warning line", file=sys.stderr)
    display(HTML(f"<b>chart of {region}</b>"))
    return {"region": region, "rows": rows}

@mcp.tool
def picture():
    return Image(PNG)

@mcp.tool
async def slow_echo(text: str) -> str:
    print("before the await")
    await asyncio.sleep(0.05)
    print(f"after the await: {text}")
    return text

@mcp.tool
def divide(a: int, b: int) -> float:
    numerator = a * 7
    return numerator / b

@mcp.tool
def scale(x: int) -> int:
    return x * 2

"""
    + ADD_BARE
)


@pytest.fixture(scope="module")
def served(kernel, frontend):
    return start_server(kernel, SETUP)


@pytest.fixture(scope="module")
def monitor(served, frontend):
    """One monitor, opened with %mcp monitor; its parts by the role they play."""
    box = frontend.open_monitor(served.kernel)
    parts = frontend.children(box)
    header, pending, filters, calls, table, insert, detail, _, output, trace, tasks, pause = parts
    button, note = frontend.children(insert)
    return {"box": box, "header": header, "pending": pending, "filters": filters,
            "calls": calls, "table": table,
            "insert": insert, "insert_button": button, "insert_note": note,
            "detail": detail, "output": output, "trace": trace, "tasks": tasks,
            "pause": pause}  # fmt: skip


def labels(frontend: Frontend, monitor: dict) -> list[str]:
    return frontend.labels(monitor["table"])


async def select_newest(frontend: Frontend, monitor: dict, needle: str) -> dict:
    """Wait for the newest row containing ``needle`` to finish and click it; the details."""

    def finished() -> tuple[int] | None:
        rows = labels(frontend, monitor)
        index = next((i for i, r in enumerate(rows) if needle in r), None)
        if index is None or rows[index].endswith(("running", "queued")):
            return None
        return (index,)

    (index,) = await frontend.until(finished)
    frontend.edit(monitor["table"], index=index)
    detail = await frontend.until(
        lambda: needle in (v := frontend.state(monitor["detail"])["value"]) and v
    )
    return {"detail": detail, "outputs": frontend.state(monitor["output"])["outputs"]}


@MODES
async def test_the_header_shows_the_server_and_each_client_with_its_dialect(
    served, frontend, monitor, mode
):
    era = {"legacy": "handshake (initialize)", "auto": "2026-07-28 stateless"}[mode]
    async with connect(served, mode) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
        header = await frontend.until(
            lambda: era in (v := frontend.state(monitor["header"])["value"]) and v
        )
    assert served.url in header and "bearer token" in header
    assert "<td>mcp</td>" in header  # the SDK client's name from its handshake or _meta
    assert "2025-11-25" in header or "2026-07-28" in header
    assert "confirm: marked, timeout 120 s" in header


async def test_a_call_in_the_table_and_its_details_with_output_captured(served, frontend, monitor):
    async with connect(served, "legacy") as client:
        result = await client.call_tool("report", {"region": "north"})
    assert result.structured_content == {"region": "north", "rows": 3}
    row = await frontend.until(
        lambda: next(
            (r for r in labels(frontend, monitor) if "report" in r and r.endswith("done")), None
        )
    )
    assert "tools/call" in row and '{"region":"north"}' in row
    shown = await select_newest(frontend, monitor, "report")
    assert "&quot;region&quot;: &quot;north&quot;" in shown["detail"]  # arguments, in full
    assert "&quot;rows&quot;: 3" in shown["detail"]  # the result's JSON
    outputs = await frontend.until(lambda: frontend.state(monitor["output"])["outputs"])
    assert {"output_type": "stream", "name": "stdout", "text": "counting north\n"} in outputs
    assert {"output_type": "stream", "name": "stderr", "text": "a warning line\n"} in outputs
    html = [o["data"]["text/html"] for o in outputs if o["output_type"] == "display_data"]
    assert html == ["<b>chart of north</b>"]
    # Captured, not spilled under the cell that ran last; and kept in mcp.calls.
    assert not any("counting north" in text for text in frontend.streams)
    kept = served.kernel.eval("[c.output for c in mcp.calls if c.target == 'report'][-1]")
    assert kept[0] == {"output_type": "stream", "name": "stdout", "text": "counting north\n"}


async def test_images_in_a_result_are_rendered_as_images(served, frontend, monitor):
    async with connect(served, "legacy") as client:
        await client.call_tool("picture", {})
    shown = await select_newest(frontend, monitor, "picture")
    assert f"src='data:image/png;base64,{base64.b64encode(PNG).decode()}'" in shown["detail"]


async def test_output_of_an_async_tool_after_an_await_is_captured_too(served, frontend):
    async with connect(served, "legacy") as client:
        assert (await client.call_tool("slow_echo", {"text": "hi"})).content[0].text == "hi"
    output = served.kernel.eval("[c.output for c in mcp.calls if c.target == 'slow_echo'][-1]")
    assert output == [
        {
            "output_type": "stream",
            "name": "stdout",
            "text": "before the await\nafter the await: hi\n",
        }
    ]
    assert not any("after the await" in text for text in frontend.streams)


async def test_a_failure_shows_its_traceback_and_debug_opens_it(served, frontend, monitor):
    kernel = served.kernel
    async with connect(served, "legacy") as client:
        result = await client.call_tool("divide", {"a": 3, "b": 0})
    assert result.is_error and "ZeroDivisionError" in result.content[0].text
    shown = await select_newest(frontend, monitor, "divide")
    assert "Traceback" in shown["detail"] and "numerator / b" in shown["detail"]
    failed_id = kernel.eval("mcp.calls[-1].id")

    def debugger(line: str, commands: list[str]) -> str:
        answers = iter(commands)
        _, printed = kernel.run(
            line,
            allow_stdin=True,
            stdin_hook=lambda m: kernel.client.input(next(answers)),
        )
        return printed

    # Right after the failed call, %debug opens it: its locals are there.
    assert "21" in debugger("%debug", ["p numerator", "q"])
    # Later calls (and a failing cell) intervene; %mcp debug still finds the old one.
    async with connect(served, "legacy") as client:
        await client.call_tool("add", {"a": 1, "b": 1})
    with pytest.raises(KernelError):
        kernel.run("1 / 0")
    assert "a = 3" in debugger(f"%mcp debug {failed_id}", ["p f'a = {a}'", "q"])


def test_debug_without_a_failed_call_is_a_usage_error(served):
    served.kernel.run("ok = next(c for c in mcp.calls if c.status == 'done')")
    for line, message in [
        ("%mcp debug {ok.id}", "has no traceback"),
        ("%mcp debug 999999", "no call #999999"),
        ("%mcp debug first", "invalid int value"),
    ]:
        with pytest.raises(KernelError) as error:
            served.kernel.run(line)
        assert error.value.ename == "UsageError" and message in error.value.evalue


async def test_replay_runs_the_current_definition_with_the_same_arguments(served, afterwards):
    kernel = served.kernel
    afterwards(kernel, "@mcp.tool\ndef scale(x: int) -> int:\n    return x * 2\n")
    async with connect(served, "legacy") as client:
        assert (await client.call_tool("scale", {"x": 4})).content[0].text == "8"
    kernel.run("call = mcp.calls[-1]")
    assert kernel.eval("call.replay()") == 8
    kernel.run("@mcp.tool\ndef scale(x: int) -> int:\n    print('fixed')\n    return x * 10\n")
    _, printed = kernel.run("print(call.replay())")
    assert printed == "fixed\n40\n"  # in the notebook: its output goes under the cell
    assert kernel.eval("(call.arguments, call.result['content'][0]['text'])") == ({"x": 4}, "8")


async def test_trace_shows_raw_json_rpc_traffic(served, frontend, monitor):
    kernel = served.kernel
    layout = frontend.state(monitor["trace"])["layout"].removeprefix("IPY_MODEL_")
    assert frontend.state(layout)["display"] == "none"
    kernel.run("%mcp trace on")
    async with connect(served, "legacy") as client:
        await client.call_tool("add", {"a": 20, "b": 22})
    reply = "&quot;text&quot;: &quot;42&quot;"
    # The request's line and the reply's may reach the front end in two updates: wait for both.
    trace = await frontend.until(
        lambda: (
            "tools/call" in (v := frontend.state(monitor["trace"])["value"]) and reply in v and v
        )
    )
    assert frontend.state(layout)["display"] is None
    assert "→" in trace and "←" in trace and "&quot;jsonrpc&quot;: &quot;2.0&quot;" in trace
    assert reply in trace  # the reply, raw
    kernel.run("%mcp trace off")
    await frontend.until(lambda: frontend.state(layout)["display"] == "none")


async def test_several_monitors_stay_live(served, frontend, monitor):
    before = set(frontend.find("VBox", "mcp-monitor"))
    served.kernel.run("second = mcp.monitor()\ndisplay(second)")
    (box,) = frontend.new("VBox", "mcp-monitor", before)
    other = {"table": frontend.children(box)[4]}
    async with connect(served, "legacy") as client:
        await client.call_tool("add", {"a": 123, "b": 4})
    for view in (monitor, other):
        await frontend.until(lambda view=view: '{"a":123,"b":4}' in labels(frontend, view)[0])
    served.kernel.run("second.close()")


async def test_a_burst_of_calls_leaves_the_notebook_responsive_and_history_bounded(
    served, frontend, monitor
):
    kernel = served.kernel
    updates_before = frontend.updates[(monitor["table"], "_options_labels")]
    async with connect(served, "legacy") as client:
        for start in range(0, 1000, 100):
            await asyncio.gather(
                *(client.call_tool("add", {"a": i, "b": 0}) for i in range(start, start + 100))
            )
        _, printed = kernel.run("print(len(mcp.calls))")
        assert printed == "1000\n"  # the default bound: a long session does not grow
        await frontend.until(lambda: '{"a":999,"b":0}' in "".join(labels(frontend, monitor)[:100]))
        # The table shows the newest rows (the rest: filters, search, mcp.calls).
        assert len(labels(frontend, monitor)) == calltable.SHOWN
        assert "filter or search to find older calls" in frontend.state(monitor["calls"])["value"]
        # Renders are batched: far fewer table updates than calls.
        updates = frontend.updates[(monitor["table"], "_options_labels")] - updates_before
        assert 1 <= updates < 1000

        kernel.run("%mcp monitor --history 50")
        await client.call_tool("add", {"a": -1, "b": 0})
        assert kernel.eval("len(mcp.calls)") == 50
        await frontend.until(lambda: len(labels(frontend, monitor)) == 50)
        assert '{"a":-1,"b":0}' in labels(frontend, monitor)[0]


async def test_the_task_list_shows_tasks_and_cancels_the_selected_one(served, frontend, monitor):
    kernel = served.kernel
    kernel.run(
        "_t = mcp.tasks.create('tools/call slow_echo', 'a-client'); "
        "_stopped = []; _t.stop = lambda: _stopped.append(True)"
    )
    _, table, cancel = frontend.children(monitor["tasks"])

    def row() -> str | None:
        labels = frontend.state(table)["_options_labels"]
        found = [x.replace("\u00a0", " ") for x in labels if "slow_echo" in x]
        return found[0] if found else None

    shown = await frontend.until(row)
    assert "working" in shown and "a-client" in shown and " s " in shown
    index = [i for i, x in enumerate(frontend.state(table)["_options_labels"]) if "slow_echo" in x]
    frontend.edit(table, index=index[0])
    await frontend.until(lambda: not frontend.state(cancel)["disabled"])
    frontend.click(cancel)
    await frontend.until(lambda: "cancelled" in (row() or ""))
    assert kernel.eval("_t.status") == "cancelled" and kernel.eval("_stopped") == [True]
    assert kernel.eval("_t.message") == "cancelled from the notebook"


HELLO, TARGET = "mcp_notebook.cells", "mcp_notebook.frontend"  # js/labextension/src/index.ts


async def hello_after(front: Frontend, click: Callable[[], None]) -> str:
    """Run ``click``; the id of the hello comm it made the kernel open."""
    before = {i for i, (target, _) in front.opened.items() if target == HELLO}
    click()
    news = await front.until(
        lambda: {i for i, (target, _) in front.opened.items() if target == HELLO} - before
    )
    return news.pop()


def note(frontend: Frontend, monitor: dict) -> str:
    return frontend.state(monitor["insert_note"])["value"]


async def test_insert_as_cell_asks_the_front_end_that_clicked_whoever_else_shares_the_kernel(
    kernel, served, frontend, monitor
):
    """``frontend`` plays JupyterLab with mcp_notebook's extension (answering as index.ts
    does); ``vscode`` a second front end on the same kernel without it, which closes every
    comm the kernel opens on a target it lacks, and does so first."""
    async with connect(served, "legacy") as client:
        result = await client.call_tool("add", {"a": 20, "b": 22})
    assert result.content[0].text == "42"
    call_id = kernel.eval("mcp.calls[-1].id")
    await frontend.until(lambda: '{"a":20,"b":22}' in labels(frontend, monitor)[0])
    await select_newest(frontend, monitor, "add")
    layout = frontend.state(monitor["insert"])["layout"].removeprefix("IPY_MODEL_")
    await frontend.until(lambda: frontend.state(layout).get("display") is None)  # shown
    kernel.run("from mcp_notebook.ui import render")
    code = kernel.eval(f"render.cell_code(mcp.calls.find({call_id}))")
    assert "add(\n    a=20,\n    b=22,\n)" in code
    button = monitor["insert_button"]
    vscode = Frontend(kernel)
    try:
        # The Lab tab has not announced itself: its click makes the kernel ask who has the
        # extension. VS Code closes that comm first, which says nothing about the tab.
        hello = await hello_after(frontend, lambda: frontend.click(button))
        await vscode.until(lambda: hello in vscode.opened)
        vscode.close_comm(hello)
        await frontend.until(lambda: "Asked the notebook" in note(frontend, monitor))
        # The extension answers the hello with a comm of its own, then closes the hello.
        lab = frontend.open_comm(TARGET, {})
        frontend.close_comm(hello)
        (request,) = await frontend.until(lambda: frontend.received.get(lab))
        assert request == {"request": request["request"], "code": code}  # what to_cell() gives
        frontend.send(lab, {"request": request["request"], "inserted": True, "index": 3})
        await frontend.until(lambda: "Inserted below the current cell" in note(frontend, monitor))
        kernel.run(code)  # the inserted cell, run: the call's result
        assert kernel.eval("_") == 42

        # Announced now: the next click goes straight to it; a refusal shows, escaped.
        frontend.click(button)
        await frontend.until(lambda: len(frontend.received[lab]) == 2)
        refused = {"request": frontend.received[lab][1]["request"], "inserted": False}
        frontend.send(lab, {**refused, "error": "no <open> notebook"})
        await frontend.until(lambda: "no &lt;open&gt; notebook" in note(frontend, monitor))

        # A click in VS Code: the Lab tab is not asked (no copy inserted there); VS Code
        # closes the hello unanswered, and the note says where the extension is missing.
        hello = await hello_after(frontend, lambda: vscode.click(button))
        await vscode.until(lambda: hello in vscode.opened)
        vscode.close_comm(hello)
        shown = await frontend.until(
            lambda: (
                "not active in the front end you clicked in" in (v := note(frontend, monitor)) and v
            )
        )
        assert f"mcp.calls.find({call_id}).to_cell()" in shown
        assert len(frontend.received[lab]) == 2
        assert "mcp-cell-code" in frontend.state(monitor["detail"])["value"]  # still to copy
        assert kernel.eval("mcp.ui.frontends().sessions") == [frontend.session.session]
    finally:
        vscode.close()
    assert kernel.eval("1 + 1") == 2  # the kernel waited for nothing
