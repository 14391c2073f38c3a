"""`mcp-notebook serve`: a notebook in a fresh kernel, served over HTTP until Ctrl-C."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import MODES, Served, connect
from tests.portable import alive
from tests.serving import SERVE, ServeProcess
from tests.sources import LOAD, notebook
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "notebooks" / "quickstart.ipynb"


@pytest.fixture(scope="module")
def quickstart():
    served = ServeProcess(str(QUICKSTART), "--port", "0", "--token", "s3cret")
    url = served.wait_for_url()
    yield served, Served(kernel=None, url=url, token="s3cret")
    served.stop()


@MODES
async def test_serves_the_quickstart_notebook(quickstart, mode):
    _, served = quickstart
    async with connect(served, mode) as client:
        assert client.server_info.name == "quickstart"
        assert [t.name for t in (await client.list_tools()).tools] == ["add"]
        assert (await client.call_tool("add", {"a": 40, "b": 2})).content[0].text == "42"
        sales = await client.read_resource("df://sales")
        assert sales.contents[0].text.startswith("region,units,price\nnorth,120,9.5")
        prompt = await client.get_prompt("summarize", {"topic": "sales"})
        assert prompt.messages[0].content.text == "Summarize sales in 3 bullet points."


# An installed package shadowed by a module that fails the way a missing one does: the
# kernel serve starts inherits PYTHONPATH, so `import pandas` fails there as after a bare
# `pip install mcp-notebook`.
NO_PANDAS = 'raise ModuleNotFoundError("No module named \'pandas\'", name="pandas")\n'


async def test_a_bare_install_without_pandas_serves_the_quickstart_all_but_its_dataframe(
    tmp_path,
):
    (tmp_path / "pandas.py").write_text(NO_PANDAS)
    paths = [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    served = ServeProcess(str(QUICKSTART), "--port", "0", "--token", "s3cret", env=env)
    try:
        endpoint = Served(kernel=None, url=served.wait_for_url(), token="s3cret")
        async with connect(endpoint, "legacy") as client:
            assert (await client.call_tool("add", {"a": 40, "b": 2})).content[0].text == "42"
            prompt = await client.get_prompt("summarize", {"topic": "sales"})
            assert prompt.messages[0].content.text == "Summarize sales in 3 bullet points."
            assert (await client.list_resources()).resources == []
    finally:
        served.stop()
    said = [line for line in served.stderr if "pandas" in line]
    assert len(said) == 1 and 'pip install "mcp-notebook[dataframes]"' in said[0], said


def test_the_token_is_required(quickstart):
    _, served = quickstart
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    request = urllib.request.Request(
        served.url, body, {"Content-Type": "application/json", "Accept": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401


def test_prints_url_and_token_on_stderr_and_nothing_on_stdout(quickstart):
    process, served = quickstart
    text = "".join(process.stderr)
    assert served.url in text and "Token: s3cret" in text
    # The notebook loads the extension itself: serve does not load it a second time first.
    assert "already loaded" not in text
    # The address and the token once, in serve's words: the notebook's own `%mcp start`
    # announces nothing headless, and the kernel runs without a TCP warning.
    assert text.count(served.url) == 1 and text.count("s3cret") == 1
    assert "bearer token is required" not in text and "without encryption" not in text
    cells = [line for line in text.splitlines() if line.startswith("mcp-notebook: ")]
    assert [line.split(": ", 2)[2][:11] for line in cells[1:6]] == [
        f"cell {n} of 5" for n in range(1, 6)
    ]


def test_ctrl_c_shuts_the_kernel_down():
    served = ServeProcess(str(QUICKSTART), "--port", "0", "--no-auth")
    served.wait_for_url()
    kernels = served.children()
    assert kernels, "the kernel runs as a child process"
    assert served.stop() == 0
    assert "Shutting down the kernel" in "".join(served.stderr)
    wait_until(lambda: not any(alive(pid) for pid in kernels), "the kernel to exit", timeout=10)
    assert served.process.stdout.read() == ""


def test_a_failing_cell_stops_start_up_with_its_traceback(tmp_path):
    path = notebook(tmp_path / "broken.ipynb", LOAD, "ratio = 1 / 0", "%mcp start")
    served = ServeProcess(str(path), "--port", "0")
    code = served.process.wait(120)
    served._reader.join(5)
    text = "".join(served.stderr)
    assert code == 1
    assert "cell 2 of 3 failed" in text
    assert "ZeroDivisionError" in text


def test_a_missing_notebook_is_a_clear_error(tmp_path):
    result = subprocess.run(
        [*SERVE, str(tmp_path / "nope.ipynb")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "no such notebook" in result.stderr


# The notebook's own start line asks for another port and name than serve's command line.
OWN_START = """\
import os

@mcp.tool
def kernel_state() -> dict:
    history = get_ipython().history_manager
    return {
        "options_in_environment": "MCP_NOTEBOOK_SERVE_OPTIONS" in os.environ,
        "token_in_history": any("s3" + "cret" in cell for cell in history.input_hist_raw),
    }
"""


async def test_serves_options_win_over_the_notebooks_own_start_without_an_environment_variable(
    tmp_path,
):
    with socket.socket() as busy:  # the notebook's port: taken, so its start would fail
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        start = f"%mcp start --port {port} --name from-the-notebook"
        path = notebook(tmp_path / "own_start.ipynb", LOAD, OWN_START, start)
        process = ServeProcess(
            str(path), "--port", "0", "--name", "from-the-command-line", "--token", "s3cret"
        )
        try:
            served = Served(kernel=None, url=process.wait_for_url(), token="s3cret")
            assert urlsplit(served.url).port not in (port, None)
            async with connect(served, "legacy") as client:
                assert client.server_info.name == "from-the-command-line"
                result = await client.call_tool("kernel_state", {})
                # Pinned by a call in the kernel, which its input history does not keep.
                assert result.structured_content == {
                    "options_in_environment": False,
                    "token_in_history": False,
                }
        finally:
            process.stop()
