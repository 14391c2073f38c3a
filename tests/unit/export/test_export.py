"""mcp-notebook export: which code is exported, and the ASGI app that serves an export.

The install into a fresh virtualenv, over stdio and uvicorn subprocesses, is in
tests/e2e/export/test_export_install.py (e2e)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp.types as types
import pytest
import uvicorn
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_notebook import Context, __version__
from mcp_notebook.export.extract import extract
from mcp_notebook.export.package import ExportFailed, export_notebook, package_name, runtime_range
from mcp_notebook.export.runtime import asgi_app, exported_app
from mcp_notebook.export.wheel import wheel_name
from tests.conftest import MODES
from tests.export.messages import INITIALIZE
from tests.export.notebooks import helper_notebook
from tests.waiting import until, wait_until

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"
TOKEN = "asgi-test-token"
RELEASE = threading.Event()  # lets the slow tool below finish


def cells(*sources: str):
    return list(enumerate(sources, start=1))


# -- which code is exported -----------------------------------------------------------------
def test_magics_and_display_only_statements_are_removed_and_the_order_kept():
    result = extract(
        cells(
            "%load_ext mcp_notebook",
            "import math\nx = 2  # kept, with its comment\nx\nprint(x)\ndisplay(x)",
            "%mcp start\nmcp.start(port=0)",
            "y = math.sqrt(x)\ny.hex()",
            "x, y\nx == y",
        )
    )
    assert result.exported == [2, 4]
    assert result.display_only == [1, 3, 5]
    assert result.code == (
        "# %% cell 2\nimport math\nx = 2  # kept, with its comment\n\n\n"
        "# %% cell 4\ny = math.sqrt(x)\ny.hex()\n"
    )
    assert result.problems == []
    assert result.imports == set()  # math is the standard library's


def test_what_cannot_run_without_ipython_is_left_out_and_reported():
    result = extract(
        cells(
            "%%bash\necho hi",
            "shell = get_ipython()",
            "from IPython.display import Markdown\nnote = Markdown('x')",
            "files = !ls",
            "%time z = 1\nw = 1",
        )
    )
    assert [str(p) for p in result.problems] == [
        "cell 1: cell magic %%bash (left out)",
        "cell 2: needs IPython (get_ipython()) (left out)",
        "cell 3: needs IPython (from IPython.display import ...) (left out)",
        "cell 4: not Python without IPython (line 1: invalid syntax) (left out)",
        "cell 5: '%time z = 1' removed (runs differently)",
    ]
    assert result.exported == [5]
    assert "w = 1" in result.code and "z = 1" not in result.code


def test_live_variables_confirmations_and_var_resources_are_reported():
    result = extract(
        cells(
            "import pandas as pd\nlimit = 3",
            "@mcp.tool(confirm=True)\ndef top(n: int) -> int:\n    return min(n, limit)",
            "limit = 5\nmcp.resource(var='limit')",
        )
    )
    text = "\n".join(map(str, result.problems))
    assert "cell 2: top() reads 'limit', which cell 3 assigns again" in text
    assert "cell 2: a tool with confirm=True" in text
    assert "cell 3: mcp.resource(var='limit')" in text
    assert result.imports == {"pandas"}


def test_app_views_are_reported_as_needing_ipython():
    result = extract(
        cells(
            "@mcp.tool(app=lambda result: result)\ndef plot(n: int) -> int:\n    return n",
            "mcp.app('board', 'view')",
            "@mcp.tool\ndef plain() -> int:\n    return 1",
        )
    )
    needs = [p for p in result.problems if "app view" in str(p)]
    assert [str(p).split(":")[0] for p in needs] == ["cell 1", "cell 2"]
    assert all("the export's check refuses it" in str(p) for p in needs)


def test_package_names_are_importable_and_unlike_the_notebooks_imports():
    assert package_name(Path("My Notebook-2.ipynb")) == "my_notebook_2_mcp"
    assert package_name(Path("2024 sales.py")) == "nb_2024_sales_mcp"


def test_the_helper_notebook_export_reports_what_it_left_out(tmp_path):
    result = export_notebook(helper_notebook(tmp_path), tmp_path / "out")
    report = result.summary()
    assert "cell 5: cell magic %%bash (left out)" in report
    assert "cell 6: needs IPython (get_ipython()) (left out)" in report
    assert "confirm=True" in report
    assert result.extracted.display_only == [1, 7, 8]
    assert result.registered["tools"] == ["forget", "word_stats"]
    assert "cell magic %%bash" in (result.directory / "README.md").read_text()


def test_an_export_whose_code_fails_says_why(tmp_path):
    notebook = tmp_path / "broken.py"
    notebook.write_text("# %%\nimport json\n\n# %%\nraise RuntimeError('no data here')\n")
    with pytest.raises(ExportFailed, match="no data here"):
        export_notebook(notebook, tmp_path / "out")


def test_the_export_command_pins_the_notebooks_imports(tmp_path):
    import pandas

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcp_notebook",
            "export",
            str(NOTEBOOKS / "quickstart.ipynb"),
            "-o",
            str(tmp_path / "q"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "exported quickstart_mcp" in done.stdout and "tools: add" in done.stdout
    pyproject = (tmp_path / "q" / "pyproject.toml").read_text()
    assert f'"pandas=={pandas.__version__}"' in pyproject
    # The kernel-free runtime, in this release's minor series; not the notebook package.
    low, high = runtime_range()
    assert f'"mcp-notebook-runtime>={low},<{high}"' in pyproject
    assert '"mcp-notebook==' not in pyproject
    assert (tmp_path / "q" / "wheels" / wheel_name(__version__)).is_file()
    missing = subprocess.run(
        [sys.executable, "-m", "mcp_notebook", "export", "nowhere.ipynb", "-o", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "no such notebook" in missing.stderr


# -- the ASGI app ---------------------------------------------------------------------------
def _app():
    # exported_app defaults MPLBACKEND for its process (an export's own): not for the
    # kernels that later tests of this session start, whose default is the inline backend.
    backend = os.environ.get("MPLBACKEND")
    app = exported_app("asgi-test", {})
    if backend is None:
        os.environ.pop("MPLBACKEND", None)

    @app.tool
    def add(a: int, b: int = 1) -> int:
        return a + b

    @app.tool
    async def count_up(steps: int, ctx: Context) -> str:
        for i in range(1, steps + 1):
            ctx.report_progress(i, total=steps, message=f"step {i}")
            await asyncio.sleep(0)
        return "counted"

    @app.tool(confirm=True)
    def wipe(table: str) -> str:
        return f"wiped {table}"

    @app.tool
    def slow() -> str:
        RELEASE.wait(60)
        return threading.current_thread().name

    app.prompt("greet", "Hello {name}")
    app.resource("some notes", name="notes")
    return app


class Served:
    """uvicorn serving the ASGI app on a loopback port, on a thread of this process."""

    def __init__(self, app: Any) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        wait_until(lambda: self.server.started, "uvicorn listening")
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/mcp"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


@pytest.fixture(scope="module")
def asgi_server() -> Iterator[Served]:
    # MCP_NOTEBOOK_CONFIRM=elicit: confirm=True tools ask the client (deny is the default).
    environ = {"MCP_NOTEBOOK_TOKEN": TOKEN, "MCP_NOTEBOOK_CONFIRM": "elicit"}
    server = Served(asgi_app(_app(), environ=environ))
    yield server
    server.stop()


def client(asgi_server: Served, mode: str, **options: Any):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    return http, Client(
        streamable_http_client(asgi_server.url, http_client=http), mode=mode, **options
    )


@MODES
async def test_the_sdk_client_lists_calls_reads_and_gets(asgi_server, mode):
    http, sdk = client(asgi_server, mode)
    async with http, sdk as c:
        assert c.server_info.name == "asgi-test"
        assert {t.name for t in (await c.list_tools()).tools} == {
            "add",
            "count_up",
            "wipe",
            "slow",
        }
        assert (await c.call_tool("add", {"a": 1, "b": 2})).content[0].text == "3"
        assert (await c.read_resource("resource://notes")).contents[0].text == "some notes"
        prompt = await c.get_prompt("greet", {"name": "Ada"})
        assert prompt.messages[0].content.text == "Hello Ada"
        bad = await c.call_tool("add", {"a": "one"})
        assert bad.is_error


@MODES
async def test_progress_streams_on_the_calls_response(asgi_server, mode):
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    http, sdk = client(asgi_server, mode)
    async with http, sdk as c:
        result = await c.call_tool("count_up", {"steps": 3}, progress_callback=on_progress)
        assert result.content[0].text == "counted"
        await c.list_tools()  # a barrier: the client runs each callback in a task
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_a_confirmation_asks_the_client_on_the_calls_stream(asgi_server):
    async def on_elicit(context, params):
        return types.ElicitResult(action="accept", content={"approve": True})

    http, sdk = client(asgi_server, "legacy", elicitation_callback=on_elicit)
    async with http, sdk as c:
        result = await asyncio.wait_for(c.call_tool("wipe", {"table": "t"}), 30)
    assert result.content[0].text == "wiped t", result


async def test_a_slow_tool_runs_on_a_worker_while_the_server_answers(asgi_server):
    RELEASE.clear()
    http, sdk = client(asgi_server, "auto")
    async with http, sdk as c:
        call = asyncio.ensure_future(c.call_tool("slow", {}))
        other_http, other_sdk = client(asgi_server, "legacy")
        async with other_http, other_sdk as other:  # answered while the tool still waits
            assert (await other.call_tool("add", {"a": 1})).content[0].text == "2"
        assert not call.done()
        RELEASE.set()
        result = await asyncio.wait_for(call, 30)
    assert result.content[0].text.startswith("mcp-tool")


def test_inline_serving_is_chosen_by_the_environment():
    from mcp_notebook.protocol import InlineExecutor

    app = _app()
    inline = asgi_app(app, environ={"MCP_NOTEBOOK_TOKEN": TOKEN, "MCP_NOTEBOOK_INLINE": "1"})
    assert isinstance(inline.server.executor, InlineExecutor)
    assert not isinstance(
        asgi_app(app, environ={"MCP_NOTEBOOK_TOKEN": TOKEN}).server.executor, InlineExecutor
    )


async def _post(asgi_server: Served, body: Any, **headers: str) -> httpx2.Response:
    base = {
        "Authorization": f"Bearer {TOKEN}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(asgi_server.url, json=body, headers={**base, **headers})


async def test_the_security_defaults_hold(asgi_server):
    rebound = await _post(asgi_server, INITIALIZE, Host="evil.example")
    assert rebound.status_code == 403
    page = await _post(asgi_server, INITIALIZE, Origin="https://evil.example")
    assert page.status_code == 403
    anonymous = await _post(asgi_server, INITIALIZE, Authorization="")
    assert anonymous.status_code == 401
    assert anonymous.headers["WWW-Authenticate"].startswith("Bearer")
    wrong = await _post(asgi_server, INITIALIZE, Authorization="Bearer nope")
    assert wrong.status_code == 401
    ok = await _post(asgi_server, INITIALIZE)
    assert ok.status_code == 200 and ok.headers["Mcp-Session-Id"]


async def test_bad_requests_get_precise_errors(asgi_server):
    ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    no_session = await _post(asgi_server, ping)
    assert no_session.status_code == 400 and no_session.json()["id"] == 7
    unknown = await _post(asgi_server, ping, **{"Mcp-Session-Id": "no-such-session"})
    assert unknown.status_code == 404
    text = await _post(asgi_server, ping, **{"Content-Type": "text/plain"})
    assert text.status_code == 415
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        garbage = await http.post(asgi_server.url, content=b"{not json", headers=headers)
        assert garbage.status_code == 400 and garbage.json()["error"]["code"] == -32700
        huge = await http.post(asgi_server.url, content=b"x" * (5 * 2**20), headers=headers)
        assert huge.status_code == 413
        elsewhere = await http.post(asgi_server.url + "/other", json=ping, headers=headers)
        assert elsewhere.status_code == 404
        modern_get = await http.get(
            asgi_server.url, headers={**headers, "MCP-Protocol-Version": "2026-07-28"}
        )
        assert modern_get.status_code == 405


async def test_a_2026_request_with_a_header_that_disagrees_is_refused(asgi_server):
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "add",
            "arguments": {"a": 1},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
    right = await _post(asgi_server, call, **headers, **{"Mcp-Name": "add"})
    assert right.status_code == 200, right.text
    assert right.json()["result"]["content"][0]["text"] == "2"
    wrong = await _post(asgi_server, call, **headers, **{"Mcp-Name": "other"})
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == -32020


async def test_a_client_that_takes_no_sse_is_not_left_waiting_for_a_question(asgi_server):
    """A confirmation is asked on the call's stream; a JSON-only client has none (and no GET
    stream here), so the call is denied at once instead of waiting out the timeout."""
    init = {**INITIALIZE, "params": {**INITIALIZE["params"], "capabilities": {"elicitation": {}}}}
    opened = await _post(asgi_server, init)
    session = {"Mcp-Session-Id": opened.headers["Mcp-Session-Id"], "Accept": "application/json"}
    await _post(asgi_server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **session)
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call"}
    call["params"] = {"name": "wipe", "arguments": {"table": "t"}}
    reply = await asyncio.wait_for(_post(asgi_server, call, **session), 20)
    assert reply.headers["Content-Type"].startswith("application/json")
    result = reply.json()["result"]
    assert result["isError"] is True


LOGGING_SERVER = """
from mcp_notebook.export.runtime import exported_app, main

mcp = exported_app("logs", globals())


@mcp.tool
def shout(text: str) -> str:
    mcp.log("warning", text, "shouter")  # from a worker thread
    return text


main(mcp)
"""


async def test_mcp_log_in_an_export_reaches_its_stdio_client(tmp_path):
    """``mcp.log`` in exported code reaches the clients of ``python -m PACKAGE``."""
    from mcp.client.stdio import StdioServerParameters

    script = tmp_path / "logs.py"
    script.write_text(LOGGING_SERVER)
    lines: list[tuple[str, object]] = []

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        lines.append((params.level, params.data))

    server = StdioServerParameters(command=sys.executable, args=[str(script)], env=dict(os.environ))
    async with Client(server, mode="legacy", logging_callback=log, log_level="info") as client:
        assert (await client.call_tool("shout", {"text": "hello"})).content[0].text == "hello"
        await until(lambda: lines, "the log message")
    assert lines == [("warning", "hello")]
