"""Tasks over `mcp-notebook serve NOTEBOOK --transport stdio`, both eras, raw lines."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tests.schema import validate, validate_task_message
from tests.stdio import INITIALIZE, RawStdio
from tests.waiting import wait_until

EVERYTHING = str(Path(__file__).resolve().parents[3] / "notebooks" / "everything.ipynb")
EXT = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
}
_ids = itertools.count(100)


def ask(raw: RawStdio, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request_id = next(_ids)
    raw.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    return raw.reply_to(request_id)


def test_both_eras_get_tasks_over_stdio():
    raw = RawStdio("serve", EVERYTHING, "--transport", "stdio")
    try:
        # 2026-07-28: a call that runs past the notebook's --after becomes a task.
        call = {"name": "slow_compute", "arguments": {"seconds": 1}, "_meta": META}
        created = validate_task_message("tools/call", ask(raw, "tools/call", call)["result"])
        get = {"taskId": created["taskId"], "_meta": META}
        task = wait_until(
            lambda: (
                (found := ask(raw, "tasks/get", get)["result"])["status"] != "working" and found
            ),
            "the task to finish working",
            timeout=60,
        )
        validate_task_message("tasks/get", task)
        assert task["result"]["content"][0]["text"] == "compute: done after 1s"
        # 2025-11-25: the client asks for a task; tasks/result waits for the result.
        raw.send(INITIALIZE)
        init = raw.reply_to(1)
        assert "tasks" in init["result"]["capabilities"]
        raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "slow_compute", "arguments": {"seconds": 0.2}, "task": {}}
        made = validate(ask(raw, "tools/call", call)["result"], "CreateTaskResult", "2025-11-25")
        result = ask(raw, "tasks/result", {"taskId": made["task"]["taskId"]})["result"]
        assert result["content"][0]["text"] == "compute: done after 0.2s"
        listed = ask(raw, "tasks/list", {})["result"]["tasks"]
        assert [t["taskId"] for t in listed] == [made["task"]["taskId"]]
    finally:
        raw.close()
