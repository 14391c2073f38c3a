"""A notebook's MCP server through a real Jupyter Server, at its port and behind its login.

The server runs with a token and the base URL ``/base/``; the kernel is one it started
(POST api/kernels), which runs ``%mcp start`` on loopback as in JupyterLab.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_notebook import discovery
from tests.conftest import MODES
from tests.e2e.jupyter.server import JupyterServer, ServerKernel
from tests.kernel.test_http_modern import SETUP as MODERN_SETUP
from tests.kernel.test_http_modern import Modern
from tests.kernel.test_tracing import SETUP as TRACED_SETUP
from tests.kernel.test_tracing import (
    TRACED_IN_MEMORY,
    check_one_trace,
    client_span,
    console_spans,
)
from tests.stdio import module_params
from tests.waiting import OPEN_GET_STREAMS, until, wait_until

NAME = "via-jupyter"
SETUP = (
    MODERN_SETUP
    + '''
@mcp.tool
def size(text: str) -> int:
    """How long a text is."""
    return len(text)

mcp.prompt("summarize", "Summarize {topic}.")

@mcp.tool
async def wait_for_file(path: str, ctx: Context) -> str:
    """Reports progress, then waits until ``path`` exists."""
    import os
    ctx.report_progress(1, message="waiting")
    while not os.path.exists(path):
        await asyncio.sleep(0.02)
    return "released"
'''
)


@pytest.fixture(scope="module")
def jupyter() -> Iterator[JupyterServer]:
    server = JupyterServer("/base/")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def kernel(jupyter) -> Iterator[ServerKernel]:
    k = jupyter.start_kernel()
    k.run("%load_ext mcp_notebook")
    k.run("import asyncio\nfrom mcp_notebook import Context")
    k.run(SETUP)
    k.run(f"%mcp start --port 0 --name {NAME}")
    try:
        yield k
    finally:
        k.shutdown()


@pytest.fixture(scope="module")
def endpoint(jupyter, kernel) -> str:
    return jupyter.endpoint(NAME)


@asynccontextmanager
async def sdk(url: str, headers: dict[str, str], mode: str, **options) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, **options) as client,
    ):
        yield client


@MODES
async def test_the_sdk_lists_calls_reads_and_gets_through_jupyter_server(jupyter, endpoint, mode):
    assert endpoint.startswith(f"http://127.0.0.1:{jupyter.port}/base/mcp-notebook/")
    async with sdk(endpoint, jupyter.headers, mode) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"add", "where", "size"} <= tools
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result.content[0].text == "5"
        read = await client.read_resource("text://notes")
        assert read.contents[0].text == "notes"
        prompt = await client.get_prompt("summarize", {"topic": "sales"})
        assert prompt.messages[0].content.text == "Summarize sales."


@pytest.fixture(scope="module")
def traced(kernel) -> ServerKernel:
    kernel.run(TRACED_IN_MEMORY)  # the running server is traced from now on
    return kernel


@MODES
async def test_the_relay_carries_the_trace_context_into_the_kernel(jupyter, endpoint, traced, mode):
    span, meta = client_span()
    async with sdk(endpoint, jupyter.headers, mode) as client:
        result = await client.call_tool("size", {"text": "four"}, meta=meta)
    span.end()
    assert result.content[0].text == "4"
    check_one_trace(traced, span, "size")


@pytest.fixture(scope="module")
def traced_relay() -> Iterator[tuple[JupyterServer, ServerKernel]]:
    """A Jupyter Server traced by OTEL_* (its spans to its stdout), and a kernel of it
    whose server's spans go to memory."""
    traced_env = {
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_BSP_SCHEDULE_DELAY": "10",
    }
    server = JupyterServer("/base/", env=traced_env)
    k = server.start_kernel()
    try:
        k.run("%load_ext mcp_notebook")
        k.run(TRACED_SETUP)  # before the start: this server's spans go to memory
        k.run("%mcp start --port 0 --name traced-relay")
        yield server, k
    finally:
        k.shutdown()
        server.stop()


@MODES
async def test_a_traced_relay_is_the_span_between_the_client_and_the_kernel(traced_relay, mode):
    server, k = traced_relay
    span, meta = client_span()
    async with sdk(server.endpoint("traced-relay"), server.headers, mode) as client:
        result = await client.call_tool("add", {"a": 2, "b": 40}, meta=meta)
    span.end()
    assert result.content[0].text == "42"
    trace_id = f"{span.get_span_context().trace_id:032x}"

    def relay_span() -> dict | None:
        found = [
            s
            for s in console_spans(server.output())
            if s["name"] == "tools/call add" and s["context"]["trace_id"] == f"0x{trace_id}"
        ]
        return found[0] if found else None

    relayed = await until(relay_span, "the relay's span on Jupyter Server's stdout")
    assert relayed["kind"] == "SpanKind.CLIENT"
    assert relayed["parent_id"] == f"0x{span.get_span_context().span_id:016x}"
    spans = {name: (parent, own) for name, parent, own in k.eval(f"spans_of({trace_id!r})")}
    assert spans["tools/call add"][0] == relayed["context"]["span_id"].removeprefix("0x")


@MODES
async def test_the_relay_passes_the_trace_headers_of_a_client_without_meta(
    jupyter, endpoint, traced, mode
):
    span, carrier = client_span()
    async with sdk(endpoint, {**jupyter.headers, **carrier}, mode) as client:
        result = await client.call_tool("size", {"text": "three"})
    span.end()
    assert result.content[0].text == "5"
    check_one_trace(traced, span, "size")


@MODES
async def test_a_cell_defining_a_tool_reaches_the_client_through_jupyter_server(
    jupyter, endpoint, kernel, mode
):
    changed = asyncio.Event()

    async def on_message(message) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    tool = f"defined_for_{mode}"
    async with sdk(endpoint, jupyter.headers, mode, message_handler=on_message) as client:
        await client.list_tools()
        define = f"@mcp.tool\ndef {tool}() -> str:\n    return 'new'\n"
        if mode == "legacy":  # on the session's GET stream, relayed as it arrives
            await until(lambda: kernel.eval(OPEN_GET_STREAMS) >= 1, "the GET stream")
            kernel.run(define)
        else:  # 2026-07-28: on a subscriptions/listen stream
            async with client.listen(tools_list_changed=True) as subscription:
                kernel.run(define)
                await asyncio.wait_for(subscription.__anext__(), 20)
        await asyncio.wait_for(changed.wait(), 20)
        assert tool in {t.name for t in (await client.list_tools()).tools}
        assert (await client.call_tool(tool, {})).content[0].text == "new"


CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add",
        "arguments": {"a": 1}}}  # fmt: skip


@pytest.mark.parametrize(
    "authorization", [None, "token wrong", "Bearer wrong", "kernel's own token"]
)
def test_without_the_jupyter_token_nothing_reaches_the_kernel(
    jupyter, endpoint, kernel, authorization
):
    calls, sessions = kernel.eval("len(mcp.calls)"), kernel.eval("len(mcp._server.sessions)")
    if authorization == "kernel's own token":  # valid at the kernel, not at Jupyter Server
        authorization = f"Bearer {kernel.eval('mcp.token')}"
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    initialize = {**CALL, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                  "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}  # fmt: skip
    for message in (CALL, initialize):
        response = httpx2.post(endpoint, json=message, headers=headers, timeout=30)
        assert response.status_code in (401, 403), response.text
        assert "result" not in response.text
    stream = httpx2.get(endpoint, headers={**headers, "Accept": "text/event-stream"}, timeout=30)
    assert stream.status_code in (401, 403)
    listing = httpx2.get(jupyter.url + "mcp-notebook/api/servers", headers=headers, timeout=30)
    assert listing.status_code in (401, 403)
    assert kernel.eval("len(mcp.calls)") == calls
    assert kernel.eval("len(mcp._server.sessions)") == sessions


def test_the_listing_names_the_server_and_never_its_token(jupyter, endpoint, kernel):
    response = jupyter.api("GET", "mcp-notebook/api/servers")
    assert response.status_code == 200
    servers = {s["name"]: s for s in response.json()["servers"]}
    assert servers[NAME]["url"] == endpoint
    assert servers[NAME]["kernel_id"] == kernel.id and servers[NAME]["own_kernel"] is True
    assert kernel.eval("mcp.token") not in response.text
    by_kernel = servers[NAME]["kernel_path"]
    assert by_kernel == f"/base/mcp-notebook/{kernel.id}/mcp"
    modern = Modern(jupyter.origin + by_kernel, jupyter.token)  # names may repeat; ids do not
    status, _, messages = modern.send(modern.message("tools/list"))
    assert status == 200 and "add" in {t["name"] for t in messages[-1]["result"]["tools"]}


def test_an_unknown_name_is_404_and_a_known_one_keeps_the_mcp_headers(jupyter, endpoint):
    modern = Modern(jupyter.endpoint("nobody-serves-this"), jupyter.token)
    status, _, messages = modern.send(modern.message("tools/list"))
    assert status == 404 and "nobody-serves-this" in messages[0]["error"]["message"]
    assert messages[0]["id"] == 1  # the relay's own answers go to the request's id too
    modern = Modern(endpoint, jupyter.token)  # Bearer <jupyter token>: Jupyter takes it too
    where = modern.message("tools/call", {"name": "where", "arguments": {"region": "eu"}})
    status, _, messages = modern.send(where, **{"Mcp-Param-Region": "eu"})
    assert status == 200 and messages[-1]["result"]["content"][0]["text"] == "eu"
    # The kernel still sees every MCP header: one that disagrees with the body is its 400.
    status, _, messages = modern.send(where, **{"Mcp-Param-Region": "us"})
    assert status == 400 and messages[0]["error"]["code"] == -32020
    status, _, messages = modern.send(where, **{"Mcp-Name": "add"})
    assert status == 400 and messages[0]["error"]["code"] == -32020


def test_progress_streams_as_it_happens_and_hanging_up_cancels_the_call(jupyter, endpoint, kernel):
    kernel.run("cancelled.clear()")
    modern = Modern(endpoint, jupyter.token)
    message = modern.message(
        "tools/call", {"name": "wait_long", "arguments": {}, "_meta": {"progressToken": 5}}
    )
    connection = http.client.HTTPConnection(modern.host, modern.port, timeout=30)
    connection.request("POST", modern.path, json.dumps(message), modern.headers(message))
    response = connection.getresponse()
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    seen = b""
    while b"notifications/progress" not in seen:  # the tool runs on: streamed, not buffered
        line = response.readline()
        assert line, "the stream ended before the progress event"
        seen += line
    connection.sock.close()  # hang up at Jupyter Server: its relay hangs up at the kernel
    connection.close()
    wait_until(lambda: kernel.eval("cancelled") == [True], "the call cancelled")
    assert kernel.eval("[c.status for c in mcp.calls if c.target == 'wait_long'][-1]") == (
        "cancelled"
    )


async def test_large_bodies_pass_and_the_kernels_limit_still_holds(jupyter, endpoint, kernel):
    limit = kernel.eval("mcp._transport.max_body")
    async with sdk(endpoint, jupyter.headers, "legacy") as client:
        text = "x" * (limit - 64 * 1024)
        assert (await client.call_tool("size", {"text": text})).content[0].text == str(len(text))
    calls = kernel.eval("len(mcp.calls)")
    modern = Modern(endpoint, jupyter.token)
    status, _, messages = modern.send(
        modern.message("tools/call", {"name": "size", "arguments": {"text": "y" * (limit + 1)}})
    )
    # The kernel's limit (its discovery file says it), applied before the body is read.
    assert status == 413 and f"the limit is {limit} bytes" in messages[0]["error"]["message"]
    assert kernel.eval("len(mcp.calls)") == calls


@MODES
async def test_the_bridge_reaches_the_notebook_through_jupyter_server(jupyter, endpoint, mode):
    params = module_params("bridge", "--url", endpoint, "--token", jupyter.token)
    async with Client(params, mode=mode) as client:
        assert "add" in {t.name for t in (await client.list_tools()).tools}
        assert (await client.call_tool("add", {"a": 20, "b": 1})).content[0].text == "21"


async def test_the_monitor_shows_the_jupyter_user_and_a_direct_client_cannot_pose_as_one(
    jupyter, endpoint, kernel
):
    forged = {"X-Mcp-Notebook-Jupyter-User": "mallory", "X-Mcp-Notebook-Relay": "guess"}
    async with (
        httpx2.AsyncClient(headers={**jupyter.headers, **forged}, timeout=30) as http,
        Client(streamable_http_client(endpoint, http_client=http), mode="legacy") as client,
    ):
        await client.call_tool("add", {"a": 1, "b": 1})
        # Jupyter's login cookie keeps this client the same (anonymous) Jupyter user.
        me = (await http.get(jupyter.url + "api/me")).json()["identity"]["name"]
        label = kernel.eval("mcp.calls[-1].client")
        assert label.endswith(f" via Jupyter user {me}") and "mallory" not in label
        table = kernel.eval(
            "[c['transport'] for c in __import__('mcp_notebook.ui.render', fromlist=['x'])"
            ".clients(mcp._server, [])]"
        )
        assert f"http via Jupyter user {me}" in table
    direct = {"Authorization": f"Bearer {kernel.eval('mcp.token')}", **forged}
    async with sdk(kernel.eval("mcp.url"), direct, "legacy") as client:
        await client.call_tool("add", {"a": 2, "b": 2})
        assert "via" not in kernel.eval("mcp.calls[-1].client")  # forged headers: ignored
    modern = Modern(kernel.eval("mcp.url"), kernel.eval("mcp.token"))
    call = modern.message("tools/call", {"name": "add", "arguments": {"a": 3, "b": 3}})
    assert modern.send(call, **forged)[0] == 200
    assert "via" not in kernel.eval("mcp.calls[-1].client")
    modern = Modern(endpoint, jupyter.token)  # 2026-07-28 through Jupyter Server
    assert modern.send(call)[0] == 200
    assert " via Jupyter user " in kernel.eval("mcp.calls[-1].client")


def test_a_broken_stream_resumes_with_last_event_id_through_jupyter_server(
    jupyter, endpoint, tmp_path
):
    headers = {
        **jupyter.headers,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "resumer", "version": "1"}}}  # fmt: skip
    reply = httpx2.post(endpoint, json=init, headers=headers, timeout=30)
    headers["Mcp-Session-Id"] = reply.headers["Mcp-Session-Id"]
    headers["MCP-Protocol-Version"] = "2025-11-25"
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx2.post(endpoint, json=initialized, headers=headers).status_code == 202
    release = tmp_path / "release"
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "wait_for_file", "arguments": {"path": str(release)},
        "_meta": {"progressToken": "p"}}}  # fmt: skip
    parts = urlsplit(endpoint)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    connection.request("POST", parts.path, json.dumps(call), headers)
    response = connection.getresponse()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    event_id = None
    while True:  # up to the progress event, and its id
        line = response.readline().decode()
        assert line, "the stream ended before the progress event"
        if line.startswith("id:"):
            event_id = line[3:].strip()
        if "notifications/progress" in line:
            break
    assert event_id
    connection.sock.close()  # the stream breaks; the call goes on (2025-11-25)
    connection.close()
    release.touch()
    resumed = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    resume = {**headers, "Accept": "text/event-stream", "Last-Event-ID": event_id}
    resumed.request("GET", parts.path, headers=resume)
    response = resumed.getresponse()
    assert response.status == 200
    while True:  # the rest of the broken stream: the call's result
        line = response.readline().decode()
        assert line, "the resumed stream ended before the result"
        message = json.loads(line[5:]) if line.startswith("data:") and line[5:].strip() else {}
        if message.get("id") == 2:
            assert message["result"]["content"][0]["text"] == "released"
            break
    resumed.close()


# GET streams with a connection attached (a broken one stays, to be resumed).
WRITING_GET_STREAMS = (
    "sum(s['g'].writer is not None for s in mcp._transport.streams.values() if 'g' in s)"
)


def test_hanging_up_a_get_stream_closes_it_at_the_kernel(jupyter, endpoint, kernel):
    before = kernel.eval(WRITING_GET_STREAMS)
    headers = {**jupyter.headers, "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}  # fmt: skip
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "listener", "version": "1"}}}  # fmt: skip
    reply = httpx2.post(endpoint, json=init, headers=headers, timeout=30)
    session = {"Mcp-Session-Id": reply.headers["Mcp-Session-Id"],
               "MCP-Protocol-Version": "2025-11-25"}  # fmt: skip
    parts = urlsplit(endpoint)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    stream_headers = {**jupyter.headers, **session, "Accept": "text/event-stream"}
    connection.request("GET", parts.path, headers=stream_headers)
    response = connection.getresponse()
    assert response.status == 200  # headers arrive before any event: the stream is open
    assert response.headers["Content-Type"].startswith("text/event-stream")
    wait_until(lambda: kernel.eval(WRITING_GET_STREAMS) == before + 1, "the kernel's GET stream")
    connection.sock.close()
    connection.close()
    wait_until(lambda: kernel.eval(WRITING_GET_STREAMS) == before, "the GET stream closed")
    ended = httpx2.delete(endpoint, headers={**jupyter.headers, **session}, timeout=30)
    assert ended.status_code == 200
    assert kernel.eval(f"{session['Mcp-Session-Id']!r} in mcp._server.sessions") is False


@pytest.mark.parametrize(
    "url, says",
    [("http://127.0.0.1:{port}/mcp", "does not answer"), ("http://192.0.2.1:80/mcp", "loopback")],
)
def test_a_kernel_that_is_gone_or_not_on_loopback_is_a_502(jupyter, url, says):
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    path = discovery.register("gone", url.format(port=port), "secret-kernel-token")
    try:
        modern = Modern(jupyter.endpoint("gone"), jupyter.token)
        status, _, messages = modern.send(modern.message("tools/list"))
    finally:
        discovery.unregister(path)
    assert status == 502 and says in messages[0]["error"]["message"]
    assert "secret-kernel-token" not in json.dumps(messages)


def test_origins_are_judged_by_jupyter_through_it_and_by_the_kernel_directly(
    jupyter, endpoint, kernel
):
    calls = kernel.eval("len(mcp.calls)")
    origin = {"Origin": "http://elsewhere.example", "Content-Type": "application/json",
              "Accept": "application/json"}  # fmt: skip
    # Jupyter's rule: a request carrying its token may come from any page (the token is
    # the proof), and is answered with CORS headers that let the page read the session.
    allowed = httpx2.post(endpoint, json=CALL, headers={**origin, **jupyter.headers})
    assert allowed.status_code == 400  # reached the kernel: a session is required there
    assert allowed.headers["Access-Control-Allow-Origin"] == "http://elsewhere.example"
    assert "Mcp-Session-Id" in allowed.headers["Access-Control-Expose-Headers"]
    # Without it, a foreign page is refused by Jupyter's origin check (its answer: 404).
    assert httpx2.post(endpoint, json=CALL, headers=origin).status_code in (403, 404)
    # Direct to the kernel: its own rules, which refuse a foreign Origin even with the token.
    direct = {**origin, "Authorization": f"Bearer {kernel.eval('mcp.token')}"}
    assert httpx2.post(kernel.eval("mcp.url"), json=CALL, headers=direct).status_code == 403
    assert kernel.eval("len(mcp.calls)") == calls
    preflight = httpx2.options(
        endpoint,
        headers={
            "Origin": "http://elsewhere.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, mcp-session-id, "
            "mcp-protocol-version, mcp-method, mcp-name, mcp-param-region, last-event-id",
        },
    )
    assert preflight.status_code in (200, 204)
    granted = {
        h.strip().lower() for h in preflight.headers["Access-Control-Allow-Headers"].split(",")
    }
    assert {"authorization", "mcp-session-id", "mcp-param-region", "last-event-id"} <= granted


ACCEPTED = "mcp._transport.connections.accepted"  # connections the kernel's server accepted


def test_relayed_calls_reuse_the_relays_connection_to_the_kernel(jupyter, endpoint, kernel):
    modern = Modern(endpoint, jupyter.token)  # a new client connection for each call
    add = modern.message("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
    assert modern.send(add)[0] == 200
    accepted = kernel.eval(ACCEPTED)
    for _ in range(5):
        assert modern.send(add)[0] == 200
    assert kernel.eval(ACCEPTED) == accepted  # all five on the relay's kept connection


def test_a_restarted_kernel_server_is_reached_again_and_each_call_runs_once(
    jupyter, endpoint, kernel
):
    """Last in this module: it restarts the kernel's server."""
    modern = Modern(endpoint, jupyter.token)
    add = modern.message("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert modern.send(add)[0] == 200  # the relay keeps its connection to the kernel
    port = kernel.eval("int(mcp.url.split(':')[2].split('/')[0])")
    kernel.run("%mcp stop")  # closes every connection, the relay's idle one too
    kernel.run(f"%mcp start --port {port} --name {NAME}")
    calls = kernel.eval("len(mcp.calls)")
    status, _, messages = modern.send(add)
    assert status == 200 and messages[-1]["result"]["content"][0]["text"] == "3"
    assert kernel.eval("len(mcp.calls)") == calls + 1
