"""%mcp start in a real kernel: a failed restart keeps the old server (issue 12.7), unsafe
binds are refused (12.8), and the token stays out of the saved notebook (12.11)."""

from __future__ import annotations

import errno
import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import nbformat
import pytest
from nbclient import NotebookClient

from mcp_notebook import NotebookMCP, discovery
from mcp_notebook.protocol import InlineExecutor
from tests.kernels import KernelError
from tests.portable import assert_owner_only
from tests.sources import ADD_BARE
from tests.stdio import INITIALIZE

SERVE = [sys.executable, "-m", "mcp_notebook", "serve"]


def headers(token: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def answers(url: str, token: str | None) -> bool:
    """Whether an MCP server at ``url`` answers initialize (with ``token``)."""
    request = urllib.request.Request(url, json.dumps(INITIALIZE).encode(), headers(token))
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status == 200 and json.loads(response.read())["id"] == 1
    except urllib.error.URLError:
        return False


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


def discovered(kernel) -> list[str]:
    """The URLs the discovery folder lists for this kernel's process."""
    pid = kernel.eval("__import__('os').getpid()")
    return [r.url for r in discovery.running() if r.pid == pid]


def usage_error(kernel, line: str) -> str:
    with pytest.raises(KernelError) as error:
        kernel.run(line)
    assert error.value.ename == "UsageError", error.value
    return error.value.evalue


@pytest.fixture(scope="module")
def loaded(kernel):
    kernel.run("%load_ext mcp_notebook")
    kernel.run(ADD_BARE)
    yield kernel
    kernel.run("%mcp stop")


@pytest.fixture
def busy_port():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield busy.getsockname()[1]


# -- 12.7: a failed start leaves the running server alone --------------------------------
def test_a_busy_port_leaves_the_running_server_serving(loaded, busy_port):
    loaded.run("%mcp start --port 0 --name keeper")
    url, token = loaded.eval("mcp.url"), loaded.eval("mcp.token")
    message = usage_error(loaded, f"%mcp start --port {busy_port}")
    assert f"127.0.0.1:{busy_port}" in message
    assert f"The server at {url} keeps serving" in message
    assert loaded.eval("mcp.url") == url and loaded.eval("mcp.token") == token
    assert answers(url, token)
    assert discovered(loaded) == [url]


def test_a_bad_address_on_the_same_port_puts_the_server_back(loaded):
    loaded.run("%mcp start --port 0 --name keeper")
    url, token = loaded.eval("mcp.url"), loaded.eval("mcp.token")
    # Same port: the old socket must close first; 203.0.113.7 (TEST-NET-3) is not ours.
    message = usage_error(loaded, f"%mcp start --host 203.0.113.7 --port {port_of(url)}")
    assert "cannot listen on 203.0.113.7" in message
    assert loaded.eval("mcp.url") == url
    assert answers(url, token)
    assert discovered(loaded) == [url]


def open_session(url: str, token: str) -> str:
    request = urllib.request.Request(url, json.dumps(INITIALIZE).encode(), headers(token))
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.headers["Mcp-Session-Id"]


def session_answers(url: str, token: str, session: str) -> bool:
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    request = urllib.request.Request(
        url, json.dumps(ping).encode(), {**headers(token), "Mcp-Session-Id": session}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read()) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    except urllib.error.HTTPError:
        return False


def test_a_bad_address_on_the_same_port_keeps_the_sessions(loaded):
    loaded.run("%mcp start --port 0 --name keeper")
    url, token = loaded.eval("mcp.url"), loaded.eval("mcp.token")
    session = open_session(url, token)
    usage_error(loaded, f"%mcp start --host 203.0.113.7 --port {port_of(url)}")
    assert session_answers(url, token, session)


def test_a_put_back_server_keeps_its_executor_and_the_restart_error(monkeypatch):
    mcp = NotebookMCP()
    executor = InlineExecutor()
    mcp.start(port=0, executor=executor, name="put-back")
    try:
        port, bind = mcp._transport.port, mcp._bind
        failures = iter([OSError(errno.EADDRINUSE, "taken in between")])

        def bind_once_failing(*args):
            failure = next(failures, None)
            if failure is not None:
                raise failure
            return bind(*args)

        monkeypatch.setattr(mcp, "_bind", bind_once_failing)
        with pytest.raises(OSError, match="taken in between"):
            mcp.start(port=port, executor=InlineExecutor())
        assert mcp._transport.port == port and mcp._server.executor is executor
        # If putting the server back fails too, the restart's own error is the one raised.
        failures = iter([OSError(errno.EADDRINUSE, "taken in between"), RuntimeError("odd")])
        with pytest.raises(OSError, match="taken in between"):
            mcp.start(port=port)
        assert not mcp.running
    finally:
        mcp.stop()


def test_pinned_serve_options_win_over_every_start_and_stay_pinned(busy_port):
    mcp = NotebookMCP()
    assert not mcp.headless
    mcp.serve_headless(port=0, name="from-serve", token="pinned-token")
    assert mcp.headless
    try:
        info = mcp.start(port=busy_port, name="own", token="own", executor=InlineExecutor())
        assert info.port != busy_port and info.name == "from-serve"
        assert mcp.token == "pinned-token"
        with pytest.raises(RuntimeError, match="pinned already"):
            mcp.serve_headless(port=busy_port)  # the notebook cannot undo the command line
        restarted = mcp.start(port=busy_port, name="own again")
        assert restarted.port != busy_port and restarted.name == "from-serve"
    finally:
        mcp.stop()
    with pytest.raises(TypeError, match="max_body"):
        NotebookMCP().serve_headless(max_body=1)


def test_restarting_on_the_same_port_works(loaded):
    loaded.run("%mcp start --port 0 --name keeper")
    url, token = loaded.eval("mcp.url"), loaded.eval("mcp.token")
    loaded.run(f"%mcp start --port {port_of(url)}")
    assert loaded.eval("mcp.url") == url
    loaded.run("%mcp start")  # no --port while serving: keep the URL clients were given
    assert loaded.eval("mcp.url") == url and loaded.eval("mcp.token") == token
    assert answers(url, token)
    assert discovered(loaded) == [url]


def test_moving_to_a_new_port_stops_the_old_one(loaded):
    loaded.run("%mcp start --port 0 --name keeper")
    old, token = loaded.eval("mcp.url"), loaded.eval("mcp.token")
    _, output = loaded.run("%mcp start --port 0")
    new = loaded.eval("mcp.url")
    assert new != old and f"Stopped serving at {old}" in output
    assert answers(new, token) and not answers(old, token)
    assert discovered(loaded) == [new]


def test_a_new_name_replaces_the_discovery_file(loaded):
    loaded.run("%mcp start --port 0 --name keeper")
    loaded.run("%mcp start --name renamed")
    url = loaded.eval("mcp.url")
    pid = loaded.eval("__import__('os').getpid()")
    assert [(r.name, r.url) for r in discovery.running() if r.pid == pid] == [("renamed", url)]
    loaded.run("%mcp start --name keeper")


# -- 12.8: no token on a network address needs a deliberate flag -------------------------
@pytest.mark.parametrize("host", ["0.0.0.0", "::", "203.0.113.7"])
def test_no_auth_on_a_network_address_is_refused(loaded, host):
    loaded.run("%mcp start --port 0 --name keeper")
    url = loaded.eval("mcp.url")
    message = usage_error(loaded, f"%mcp start --host {host} --port 0 --no-auth")
    assert "every host that can route to this machine" in message
    assert "--allow-remote-no-auth" in message
    assert loaded.eval("mcp.url") == url  # and nothing was stopped
    assert loaded.eval("mcp.token") is not None


def test_no_auth_on_loopback_says_who_can_call(loaded):
    _, output = loaded.run("%mcp start --port 0 --no-auth")
    assert "any user or program on this machine can call your tools" in output
    assert "anyone on this host" not in output
    loaded.run("%mcp stop")
    loaded.run("%mcp start --port 0")  # the token comes back for the next tests
    assert loaded.eval("mcp.token")


def test_serve_refuses_no_auth_on_a_network_address(tmp_path):
    notebook = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), notebook)
    result = subprocess.run(
        [*SERVE, str(notebook), "--host", "0.0.0.0", "--no-auth"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert "refusing to serve without a token on 0.0.0.0" in result.stderr
    assert "--allow-remote-no-auth" in result.stderr
    assert result.stdout == ""


# -- 12.11: the saved notebook holds no token --------------------------------------------
def test_a_saved_notebook_holds_no_token(tmp_path):
    keep = tmp_path / "token.txt"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext mcp_notebook"),
        nbformat.v4.new_code_cell(ADD_BARE),
        nbformat.v4.new_code_cell("%mcp start --port 0 --name saved"),
        nbformat.v4.new_code_cell("%mcp status"),
        nbformat.v4.new_code_cell("%mcp config claude-desktop"),
        nbformat.v4.new_code_cell("mcp"),
        nbformat.v4.new_code_cell(f"open({str(keep)!r}, 'w').write(mcp.token)"),
        nbformat.v4.new_code_cell("%mcp stop"),
    ]
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    path = tmp_path / "saved.ipynb"
    nbformat.write(notebook, path)

    token = keep.read_text()
    assert len(token) >= 24  # mcp.token still gives it
    saved = path.read_text()
    assert token not in saved
    outputs = "".join(
        output.get("text", "") for cell in notebook.cells for output in cell.get("outputs", [])
    )
    assert "serving at http://127.0.0.1:" in outputs  # what a person needs is there
    assert "mcp.token" in outputs and "claude mcp add --transport stdio saved" in outputs
    assert "bearer token" in outputs  # %mcp status


def test_the_token_stays_available_to_the_notebook_and_the_bridge(loaded):
    _, output = loaded.run("%mcp start --port 0 --name keeper")
    token = loaded.eval("mcp.token")
    assert token not in output
    _, status = loaded.run("%mcp status")
    assert token not in status
    _, config = loaded.run("%mcp config claude-code")  # asked for: shown, with a warning
    assert f"Authorization: Bearer {token}" in config
    assert "clear it before you share" in config
    record = discovery.find("keeper")
    assert record.token == token
    assert_owner_only(record.path)  # last: on Windows it skips (an ACL, not mode bits)
