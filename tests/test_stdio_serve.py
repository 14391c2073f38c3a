"""`mcp-notebook serve NOTEBOOK --transport stdio`: what a client config spawns."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from mcp.client import Client

from .conftest import MODES
from .schema import validate_notification, validate_reply
from .stdio import INITIALIZE, RawStdio, module_params

QUICKSTART = str(Path(__file__).resolve().parents[1] / "notebooks" / "quickstart.ipynb")

CHATTY_CELLS = [
    "print('hello from a cell')\nimport os, sys\nos.system('echo from-a-subprocess')",
    "sys.stdout.write('raw write\\n'); sys.stderr.write('to stderr\\n')",
    "%load_ext mcp_notebook",
    "@mcp.tool\n"
    "def shout(text: str) -> str:\n"
    "    print('the tool prints', text)\n"
    "    os.system('echo the tool runs a subprocess')\n"
    "    return text.upper()",
    "%mcp start",
]


@MODES
async def test_serves_the_quickstart_over_stdio(mode):
    async with Client(module_params("serve", QUICKSTART, "--transport", "stdio"), mode=mode) as c:
        assert c.server_info.name == "quickstart"
        assert [t.name for t in (await c.list_tools()).tools] == ["add"]
        assert (await c.call_tool("add", {"a": 1, "b": 2})).content[0].text == "3"
        sales = await c.read_resource("df://sales")
        assert sales.contents[0].text.startswith("region,units,price")
        prompt = await c.get_prompt("summarize", {"topic": "rain", "n": "2"})
        assert prompt.messages[0].content.text == "Summarize rain in 2 bullet points."


@pytest.fixture
def chatty_notebook(tmp_path) -> str:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CHATTY_CELLS]
    path = tmp_path / "chatty.ipynb"
    nbformat.write(notebook, path)
    return str(path)


def test_stdout_is_protocol_only_even_when_the_notebook_prints(chatty_notebook):
    raw = RawStdio("serve", chatty_notebook, "--transport", "stdio")
    raw.send(INITIALIZE)
    validate_reply("initialize", raw.reply_to(1))
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = {"name": "shout", "arguments": {"text": "hi"}}
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    reply = validate_reply("tools/call", raw.reply_to(2))
    assert reply["result"]["content"][0]["text"] == "HI"
    assert raw.close() == 0
    for line in raw.lines:
        message = json.loads(line)  # every stdout line is one JSON-RPC message
        assert message["jsonrpc"] == "2.0"
        if "method" in message:
            validate_notification(message)
    stderr = b"".join(raw.stderr).decode()
    assert "hello from a cell" in stderr and "from-a-subprocess" in stderr
    assert "raw write" in stderr


def test_a_failing_notebook_exits_non_zero_with_nothing_on_stdout(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("raise RuntimeError('bad setup')")]
    path = tmp_path / "bad.ipynb"
    nbformat.write(notebook, path)
    raw = RawStdio("serve", str(path), "--transport", "stdio")
    assert raw.process.wait(120) == 1
    raw.close()
    assert raw.lines == []
    assert "bad setup" in b"".join(raw.stderr).decode()
