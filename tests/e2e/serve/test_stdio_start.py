"""`serve --transport stdio` starts fast: the handshake is answered while the notebook
still runs, the rest once it has run; what it shows on stderr; how its kernel is reached.

Every ordering here is shown by events: a marker the notebook writes after its first
cell, a file the test creates to let a cell go on, a reply answered at once that was
sent after the requests that wait (stdin is read in order). No wall-clock asserts.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from mcp.client import Client

from tests.conftest import MODES
from tests.portable import alive, children
from tests.schema import validate_notification
from tests.stdio import INITIALIZE, RawStdio, module_params
from tests.waiting import wait_until

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-modern", "version": "1"},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
GUTTER = "  | "


def write_notebook(folder: Path, name: str, *cells: str) -> str:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# not code: not counted")]
    notebook.cells += [nbformat.v4.new_code_cell(source) for source in cells]
    path = folder / f"{name}.ipynb"
    nbformat.write(notebook, path)
    return str(path)


def wait_for_file(path: Path) -> str:
    """A cell that waits until the test creates ``path``."""
    return f"import os, time\nwhile not os.path.exists({str(path)!r}):\n    time.sleep(0.05)"


def request(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def only_reply(raw: RawStdio, request_id: Any) -> dict[str, Any]:
    raw.reply_to(request_id, timeout=120)
    replies = [m for m in raw.messages() if "method" not in m and m.get("id") == request_id]
    assert len(replies) == 1, replies
    return replies[0]


def stderr(raw: RawStdio) -> str:
    return b"".join(raw.stderr).decode(errors="replace")


@MODES
async def test_the_handshake_is_answered_while_the_first_cell_still_sleeps(mode, tmp_path):
    marker = tmp_path / "first-cell-done"
    path = write_notebook(
        tmp_path,
        "sleepy",
        f"import pathlib, time\ntime.sleep(3)\npathlib.Path({str(marker)!r}).write_text('done')",
        "%load_ext mcp_notebook",
        "@mcp.tool\ndef hello() -> str:\n    return 'hi'",
    )
    async with Client(module_params("serve", path, "--transport", "stdio"), mode=mode) as client:
        # The handshake (initialize, or server/discover in auto mode) is done, and the
        # notebook's first cell has not finished yet.
        assert not marker.exists()
        assert client.server_info.name == "sleepy"
        tools = await client.list_tools()  # waits for the notebook
        assert marker.exists()
        assert [tool.name for tool in tools.tools] == ["hello"]
        assert (await client.call_tool("hello", {})).content[0].text == "hi"


CHANNELS = """\
import json, os, stat, psutil
from ipykernel.kernelapp import IPKernelApp

@mcp.tool
def channels() -> dict:
    connection = IPKernelApp.instance().connection_file
    listening = sorted(
        c.laddr.port for c in psutil.Process().net_connections("tcp") if c.status == "LISTEN"
    )
    return {
        "connection": json.load(open(connection)),
        "folder_mode": stat.S_IMODE(os.stat(os.path.dirname(connection)).st_mode),
        "listening": listening,
        "server_port": int(mcp.url.rsplit(":", 1)[1].split("/")[0]),
        # ipykernel's pipe for the output of forked processes: loopback TCP, hard-coded.
        "fork_pipe_port": getattr(IPKernelApp.instance().iopub_thread, "_pipe_port", None),
    }
"""


def test_a_waiting_request_hears_which_cell_runs_and_stderr_shows_it(tmp_path):
    go = tmp_path / "go"
    path = write_notebook(
        tmp_path,
        "stepwise",
        "print('loading the model')\n" + wait_for_file(go),
        "%load_ext mcp_notebook",
        CHANNELS,
    )
    raw = RawStdio("serve", path, "--transport", "stdio")
    try:
        raw.send(INITIALIZE)
        assert only_reply(raw, 1)["result"]["serverInfo"]["name"] == "stepwise"
        raw.send(INITIALIZED)
        raw.send(request(2, "tools/list", {"_meta": {"progressToken": "t"}}))

        def about_cell_1(message: dict[str, Any]) -> bool:
            params = message.get("params") or {}
            text = params.get("message") or params.get("data") or ""
            return "cell 1 of 3: print('loading the model')" in text

        # While the first cell waits for the test: progress for the request, a log line.
        progress = raw.wait_for(
            lambda m: m.get("method") == "notifications/progress" and about_cell_1(m), 120
        )
        assert progress["params"]["progressToken"] == "t"
        assert progress["params"]["total"] == 5  # the kernel, three cells, the server
        raw.wait_for(lambda m: m.get("method") == "notifications/message" and about_cell_1(m))
        assert not [m for m in raw.messages() if "method" not in m and m.get("id") == 2]
        go.touch()
        assert [t["name"] for t in only_reply(raw, 2)["result"]["tools"]] == ["channels"]
        call = request(3, "tools/call", {"name": "channels", "arguments": {}})
        raw.send(call)
        seen = only_reply(raw, 3)["result"]["structuredContent"]
    finally:
        code = raw.close()
    assert code == 0
    if sys.platform == "win32":  # no Unix sockets: TCP on loopback
        assert seen["connection"]["transport"] == "tcp"
        assert seen["connection"]["ip"] == "127.0.0.1"
    else:  # the kernel's channels are Unix sockets in a folder of this user's only
        assert seen["connection"]["transport"] == "ipc"
        assert seen["folder_mode"] & 0o777 == 0o700
        # No TCP port for the kernel's five channels: the server's, and ipykernel's own pipe.
        others = {seen["server_port"], seen["fork_pipe_port"]}
        assert set(seen["listening"]) <= others and seen["server_port"] in seen["listening"]
    text = stderr(raw)
    assert "without encryption" not in text
    lines = text.splitlines()
    steps = [
        line
        for line in lines
        if line.startswith("mcp-notebook: stepwise.ipynb: ") and "still running" not in line
    ]
    assert [line.split(": ")[2] for line in steps] == [
        "starting the kernel",
        "cell 1 of 3",
        "cell 2 of 3",
        "cell 3 of 3",
        "starting the server",
    ]
    # The notebook's own output, behind the gutter, under its cell.
    printed = lines.index(GUTTER + "loading the model")
    assert lines[printed - 1].startswith("mcp-notebook: stepwise.ipynb: cell 1 of 3")


STEPS = """
from mcp_notebook import Context

@mcp.tool
def steps(ctx: Context) -> str:
    for n in range(3):  # from 0: less than the start's steps said
        ctx.report_progress(n, total=2, message=f"step {n}")
    return "stepped"
"""


def test_a_held_calls_progress_goes_on_increasing_after_the_starts_steps(tmp_path):
    go = tmp_path / "go"
    path = write_notebook(tmp_path, "steps", wait_for_file(go), "%load_ext mcp_notebook", STEPS)
    raw = RawStdio("serve", path, "--transport", "stdio")
    try:
        raw.send(INITIALIZE)
        only_reply(raw, 1)
        raw.send(INITIALIZED)
        raw.send(request(2, "tools/call", {"name": "steps", "_meta": {"progressToken": "p"}}))
        raw.wait_for(lambda m: m.get("method") == "notifications/progress", 120)  # a step
        go.touch()
        assert only_reply(raw, 2)["result"]["content"][0]["text"] == "stepped"
        raw.wait_for(lambda m: (m.get("params") or {}).get("message") == "step 2")
    finally:
        raw.close()
    told = [m["params"] for m in raw.messages() if m.get("method") == "notifications/progress"]
    values = [p["progress"] for p in told]
    assert all(a < b for a, b in itertools.pairwise(values)), values
    assert told[0]["message"].startswith("steps: ")  # the start's, then the tool's own
    own = [p for p in told if p["message"].startswith("step ")]
    assert len(own) == 3 and own[-1]["progress"] == own[-1]["total"]
    for message in raw.messages():
        if message.get("method") == "notifications/progress":
            validate_notification(message)


@pytest.mark.parametrize("era", ["handshake", "2026"])
def test_a_notebook_that_fails_answers_each_waiting_request_with_an_error_then_exits_1(
    tmp_path, era
):
    go = tmp_path / "go"
    path = write_notebook(
        tmp_path,
        "failing",
        "%load_ext mcp_notebook",
        wait_for_file(go) + "\nraise RuntimeError('the model did not load')",
    )
    raw = RawStdio("serve", path, "--transport", "stdio")
    if era == "handshake":
        meta: dict[str, Any] = {}
        raw.send(INITIALIZE)
        raw.send(INITIALIZED)
        answered_at_once = request("ping", "ping")
    else:
        meta = {"_meta": MODERN_META}
        answered_at_once = request("ping", "server/discover", meta)
    raw.send(request(2, "tools/list", meta))
    raw.send(request(3, "prompts/list", meta))
    raw.send(answered_at_once)  # read after 2 and 3: once it is answered, they wait
    assert "result" in only_reply(raw, "ping")
    go.touch()
    assert raw.process.wait(120) == 1
    for request_id in (2, 3):
        error = only_reply(raw, request_id)["error"]
        assert error["code"] == -32000
        assert "cell 2 of 2 failed: RuntimeError: the model did not load" in error["message"]
    raw.close()
    assert "RuntimeError" in stderr(raw) and "the model did not load" in stderr(raw)
    for line in raw.lines:
        json.loads(line)  # stdout: protocol messages only


def test_stdin_closed_while_the_notebook_starts_answers_what_waits_and_leaves_no_kernel(tmp_path):
    path = write_notebook(tmp_path, "never", wait_for_file(tmp_path / "never-created"))
    raw = RawStdio("serve", path, "--transport", "stdio")
    raw.send(INITIALIZE)
    raw.send(request(2, "tools/list"))
    raw.send(request(3, "ping"))
    assert "result" in only_reply(raw, 3)
    kernels = wait_until(lambda: children(raw.process.pid), "the kernel to start")
    assert raw.close(timeout=90) == 0
    error = only_reply(raw, 2)["error"]
    assert error["code"] == -32000 and "closed stdin" in error["message"]
    wait_until(lambda: not any(map(alive, kernels)), "the kernel to exit", timeout=60)
