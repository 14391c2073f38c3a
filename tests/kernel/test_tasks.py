"""Long notebook work as tasks, in a real kernel over Streamable HTTP (raw clients).

A call that must wait behind a running cell is answered at once with a task handle; the
client polls ``tasks/get`` (2026-07-28) until the task ends. ``tasks/cancel`` of a task
still queued means it never runs. The store belongs to the kernel's ``mcp``, so tasks
outlive a stop and start of the server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import start_server
from tests.kernel.test_http_modern import META, Modern, reply_of
from tests.schema import validate_task_message
from tests.waiting import wait_until

EXT = "io.modelcontextprotocol/tasks"
TASKS_META = {
    **META,
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
}
SETUP = """
import asyncio, time
ran = []
stopped = []

@mcp.tool(task="required")
def spin(marker: str) -> str:
    \"\"\"Runs (synchronously) until interrupted.\"\"\"
    open(marker, "w").close()
    time.sleep(60)
    ran.append("spun")
    return "spun"

@mcp.tool(task="required")
async def wait(marker: str) -> str:
    \"\"\"Waits (asynchronously) until cancelled.\"\"\"
    open(marker, "w").close()
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        stopped.append(marker)
        raise
    return "waited"

@mcp.tool
def mark(label: str) -> str:
    \"\"\"Notes that it ran.\"\"\"
    ran.append(label)
    return f"ran {label}"
"""


class Tasks(Modern):
    """The raw 2026-07-28 client, declaring the Tasks extension; Mcp-Name for task ids."""

    def message(self, method: str, params: dict[str, Any] | None = None, id: Any = 1) -> dict:
        params = dict(params or {})
        params["_meta"] = {**TASKS_META, **params.get("_meta", {})}
        return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}

    def headers(self, message: dict, **overrides: str | None) -> dict[str, str]:
        task_id = (message.get("params") or {}).get("taskId")
        if task_id is not None and "Mcp-Name" not in overrides:
            overrides = {**overrides, "Mcp-Name": task_id}
        return super().headers(message, **overrides)

    def result(self, method: str, params: dict[str, Any]) -> dict:
        status, _, messages = self.send(self.message(method, params))
        reply = reply_of(messages)
        assert status == 200 and "result" in reply, reply
        return reply["result"]

    def until_terminal(self, task_id: str, timeout: float = 60) -> dict:
        def terminal() -> dict | None:
            task = validate_task_message("tasks/get", self.result("tasks/get", {"taskId": task_id}))
            return task if task["status"] in ("completed", "failed", "cancelled") else None

        return wait_until(terminal, f"task {task_id} to end", timeout)


@pytest.fixture(scope="module")
def tasks(kernel):
    served = start_server(kernel, SETUP)
    return Tasks(served.url, served.token)


def hold_the_kernel(kernel, started: Path, code: str) -> str:
    """Run a cell without waiting for it; return once it runs (it wrote ``started``)."""
    msg_id = kernel.client.execute(f"open({str(started)!r}, 'w').close()\n{code}")
    wait_until(started.exists, "the cell started")
    return msg_id


def test_a_call_behind_a_5_s_cell_is_a_task_at_once_and_polling_yields_its_result(
    tasks, kernel, tmp_path
):
    hold_the_kernel(kernel, tmp_path / "started", "import time; time.sleep(5)")
    created = tasks.result("tools/call", {"name": "mark", "arguments": {"label": "behind"}})
    validate_task_message("tools/call", created)
    assert created["resultType"] == "task" and created["status"] == "working"
    # It has not run: the cell still holds the kernel, and the task says so.
    waiting = tasks.result("tasks/get", {"taskId": created["taskId"]})
    assert waiting["status"] == "working"
    assert waiting.get("statusMessage", "").startswith("waiting for the running cell")
    done = tasks.until_terminal(created["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "ran behind"
    assert kernel.eval(f"mcp.tasks.get({created['taskId']!r}).status") == "completed"


def test_cancelling_a_queued_task_means_it_never_runs(tasks, kernel, tmp_path):
    kernel.run("ran.clear()")
    release = tmp_path / "release"
    hold_the_kernel(
        kernel,
        tmp_path / "started",
        f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.02)",
    )
    created = tasks.result("tools/call", {"name": "mark", "arguments": {"label": "never"}})
    task_id = created["taskId"]
    ack = tasks.result("tasks/cancel", {"taskId": task_id})
    assert ack == {"resultType": "complete"}
    release.touch()
    # A later call runs on the kernel thread after the cancelled one would have.
    after = tasks.result("tools/call", {"name": "mark", "arguments": {"label": "after"}})
    if after.get("resultType") == "task":
        tasks.until_terminal(after["taskId"])
    assert kernel.eval("ran") == ["after"]
    assert tasks.result("tasks/get", {"taskId": task_id})["status"] == "cancelled"
    assert kernel.eval("[c.status for c in mcp.calls if c.target == 'mark'][-2]") == "cancelled"


def test_the_task_methods_need_mcp_name_and_the_extension(tasks):
    message = tasks.message("tasks/get", {"taskId": "t-1"})
    status, _, messages = tasks.send(message, **{"Mcp-Name": None})
    assert status == 400 and reply_of(messages)["error"]["code"] == -32020
    status, _, messages = tasks.send(message, **{"Mcp-Name": "t-2"})
    assert status == 400 and reply_of(messages)["error"]["code"] == -32020
    plain = Modern.message(tasks, "tasks/get", {"taskId": "t-1"})
    status, _, messages = tasks.send(plain)
    assert status == 400 and reply_of(messages)["error"]["code"] == -32021
    status, _, messages = tasks.send(message)
    assert reply_of(messages)["error"]["code"] == -32602  # unknown: the spec's error


def test_percent_mcp_tasks_sets_the_threshold_lists_and_cancels(tasks, kernel):
    _, out = kernel.run("%mcp tasks --after 750ms")
    assert "after 0.75s" in out
    assert kernel.eval("mcp.tasks.after") == 0.75
    kernel.run("_t = mcp.tasks.create('tools/call mark', 'me')")
    _, out = kernel.run(f"%mcp tasks --cancel {kernel.eval('_t.number')}")
    assert "cancelled" in out and kernel.eval("_t.status") == "cancelled"
    reply, _ = kernel.try_run("%mcp tasks --after soon")
    assert reply["content"]["status"] == "error" and "duration" in reply["content"]["evalue"]
    kernel.run("%mcp tasks --after 2s")


def test_json_of_a_task_is_what_the_spec_says(tasks, kernel):
    shown = json.loads(
        kernel.eval("__import__('json').dumps(mcp.tasks.create('tools/call mark').modern())")
    )
    validate_task_message("tasks/get", {"resultType": "complete", **shown})


@pytest.mark.parametrize("tool", ["spin", "wait"])
def test_cancelling_a_running_task_stops_its_code(tasks, kernel, tmp_path, tool):
    """A sync tool is interrupted where it runs, as Kernel > Interrupt would; an async one
    is cancelled at its await. The kernel and the server go on."""
    kernel.run("ran.clear(); stopped.clear()")
    marker = tmp_path / "running"
    created = tasks.result("tools/call", {"name": tool, "arguments": {"marker": str(marker)}})
    wait_until(marker.exists, f"{tool} runs")
    assert tasks.result("tasks/cancel", {"taskId": created["taskId"]}) == {"resultType": "complete"}
    assert tasks.until_terminal(created["taskId"])["status"] == "cancelled"
    # A cell runs only once the tool's code left the kernel's main thread: it stopped
    # (else this would wait its 60 s out), without reaching its end.
    assert kernel.eval("ran") == []
    last = f"[c.status for c in mcp.calls if c.target == {tool!r}][-1]"
    assert kernel.eval(last) == {"spin": "interrupted", "wait": "cancelled"}[tool]
    if tool == "wait":
        assert kernel.eval("stopped") == [str(marker)]
    after = tasks.result("tools/call", {"name": "mark", "arguments": {"label": "still"}})
    assert after.get("resultType") == "task" or after["content"][0]["text"] == "ran still"
    assert kernel.eval("1 + 1") == 2


def test_tasks_outlive_a_stop_and_start_of_the_server(tasks, kernel):
    created = tasks.result("tools/call", {"name": "mark", "arguments": {"label": "x"}})
    if created.get("resultType") != "task":  # fast: make one through the store itself
        task_id = kernel.eval(
            "(lambda t: (mcp.tasks.complete(t, {'content': []}), t.id)[1])"
            "(mcp.tasks.create('tools/call mark'))"
        )
    else:
        task_id = created["taskId"]
    kernel.run("%mcp stop")
    kernel.run("%mcp start --port 0")
    tasks.__init__(kernel.eval("mcp.url"), kernel.eval("mcp.token"))  # the new address
    assert tasks.result("tasks/get", {"taskId": task_id})["taskId"] == task_id


def test_a_stop_of_the_server_cancels_its_running_tasks_and_keeps_the_ended_ones(tasks, kernel):
    created = tasks.result("tools/call", {"name": "wait", "arguments": {"marker": "/dev/null"}})
    kernel.run("%mcp stop")
    task = kernel.eval(f"(lambda t: (t.status, t.message))(mcp.tasks.get({created['taskId']!r}))")
    assert task == ("cancelled", "the server stopped")
    kernel.run("%mcp start --port 0")
    tasks.__init__(kernel.eval("mcp.url"), kernel.eval("mcp.token"))  # the new address
    assert tasks.result("tasks/get", {"taskId": created["taskId"]})["status"] == "cancelled"
