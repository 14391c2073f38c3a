"""An export's replicas on Ray Serve (issue 18): a local Ray cluster started for this module
serves 4 replicas of an exported notebook; the official SDK client in auto mode lands on
more than one, a legacy session stays on one, and a killed replica is replaced. The
replicas trace (``OTEL_TRACES_EXPORTER=console``, to their stdout: Ray's worker logs, in a
temp dir of this module's), and their spans join each client's trace."""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_notebook.export.package import export_notebook
from tests.kernel.test_tracing import client_span, console_spans
from tests.waiting import until, until_async

TOKEN = "ray-test-token"
REPLICAS = 4
NOTEBOOK = '''# %%
import asyncio
import os
import time

# %%
@mcp.tool
def replica() -> int:
    """The process id of the replica that answers."""
    return os.getpid()


@mcp.tool
def wait(ms: int = 50) -> int:
    """Wait (as a tool waiting on I/O does), then say which replica answered."""
    time.sleep(ms / 1000)
    return os.getpid()
'''

# Runs in its own interpreter: a local Ray cluster, Serve on a loopback port, the export.
CLUSTER = """
import sys
import ray
from ray import serve
from mcp_notebook.export.ray_serve import build

port, replicas, module, prefix, logs = (
    int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
)
ray.init(num_cpus=8, include_dashboard=False, log_to_driver=False, _temp_dir=logs)
serve.start(http_options={"host": "127.0.0.1", "port": port})
serve.run(build(module, replicas, ray_actor_options={"num_cpus": 0.5}),
          route_prefix=prefix)
print("ready", flush=True)
sys.stdin.read()  # until the test closes stdin
serve.shutdown()
ray.shutdown()
"""


# The replicas' spans, printed to their stdout (Ray's worker-*.out logs) as they end.
TRACED = {
    "OTEL_TRACES_EXPORTER": "console",
    "OTEL_METRICS_EXPORTER": "none",
    "OTEL_BSP_SCHEDULE_DELAY": "10",
}


def start_cluster(
    package_dir: Path,
    replicas: int,
    logs: str = "",
    module: str = "replicas_mcp.notebook",
    environ: dict[str, str | None] | None = None,
    port: int | None = None,
    route_prefix: str = "/mcp",
) -> tuple[subprocess.Popen[str], str]:
    """A Ray cluster serving the export in ``package_dir``; its process and /mcp URL.
    ``logs``: Ray's temp dir, where the workers' stdout goes, and the replicas trace to
    it (a short path: Ray's sockets are in it); empty: Ray's default, untraced.
    ``environ`` is added to (or, for a None value, removed from) the replicas' environment;
    ``route_prefix="/"`` (``serve run``'s default) routes every path to the export."""
    if port is None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(package_dir), os.environ.get("PYTHONPATH", "")]),
        "MCP_NOTEBOOK_TOKEN": TOKEN,
        "RAY_USAGE_STATS_ENABLED": "0",
        **(TRACED if logs else {}),
    }
    for name, value in (environ or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CLUSTER,
            str(port),
            str(replicas),
            module,
            route_prefix,
            logs or "/tmp/ray",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # blocks until Serve is up, or the process ended
    if line.strip() != "ready":
        process.kill()
        raise RuntimeError(f"the Ray cluster did not start (exit {process.wait()})")
    return process, f"http://127.0.0.1:{port}/mcp"


def stop_cluster(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.close()
    try:
        process.wait(120)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def export(directory: Path) -> Path:
    notebook = directory / "replicas.py"
    notebook.write_text(NOTEBOOK)
    export_notebook(notebook, directory / "out")
    return directory / "out"


@pytest.fixture(scope="module")
def ray_logs() -> Iterator[str]:
    folder = tempfile.mkdtemp(prefix="rt-", dir="/tmp")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, ray_logs) -> Iterator[str]:
    process, url = start_cluster(export(tmp_path_factory.mktemp("ray")), REPLICAS, ray_logs)
    yield url
    stop_cluster(process)


def client(url: str, mode: str) -> tuple[httpx2.AsyncClient, Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    return http, Client(streamable_http_client(url, http_client=http), mode=mode)


async def pid_of(c: Any, tool: str = "replica") -> int:
    result = await c.call_tool(tool, {})
    assert not result.is_error, result
    return int(result.content[0].text)


async def test_auto_mode_requests_spread_over_the_replicas(cluster):
    http, sdk = client(cluster, "auto")
    async with http, sdk as c:
        assert {t.name for t in (await c.list_tools()).tools} == {"replica", "wait"}
        pids = {await pid_of(c) for _ in range(3 * REPLICAS)}
    assert 1 < len(pids) <= REPLICAS


async def test_the_replicas_spans_join_the_clients_trace(cluster, ray_logs):
    """One client carries its trace context in ``_meta``, one in the HTTP headers alone:
    the ingress passes both on, and each replica's span continues its client's trace."""
    by_meta, meta = client_span()
    by_header, carrier = client_span()
    http, sdk = client(cluster, "auto")
    async with http, sdk as c:
        result = await c.call_tool("replica", {}, meta=meta)
        assert not result.is_error, result
    headers = {"Authorization": f"Bearer {TOKEN}", **carrier}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(cluster, http_client=http), mode="legacy") as c,
    ):
        result = await c.call_tool("replica", {})
        assert not result.is_error, result
    by_meta.end()
    by_header.end()
    wanted = [f"0x{s.get_span_context().trace_id:032x}" for s in (by_meta, by_header)]

    async def replica_spans() -> dict[str, dict[str, Any]] | None:
        spans = {}
        for log in glob.glob(os.path.join(ray_logs, "session_*", "logs", "worker-*.out")):
            with open(log, errors="replace") as f:
                for span in console_spans(f.read()):
                    if span["name"] == "tools/call replica":
                        spans[span["context"]["trace_id"]] = span
        return spans if all(t in spans for t in wanted) else None

    spans = await until_async(replica_spans, "the replicas' spans in Ray's worker logs")
    for client_side in (by_meta, by_header):
        context = client_side.get_span_context()
        span = spans[f"0x{context.trace_id:032x}"]
        assert span["kind"] == "SpanKind.SERVER"
        assert span["parent_id"] == f"0x{context.span_id:016x}"


async def test_a_legacy_session_stays_on_one_replica(cluster):
    http, sdk = client(cluster, "legacy")
    async with http, sdk as c:
        pids = {await pid_of(c) for _ in range(3 * REPLICAS)}
    assert len(pids) == 1


async def test_a_closed_get_stream_ends_on_its_replica_so_the_session_can_listen_again(cluster):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as raw:
        session_id, _ = await open_session(raw, cluster)
        headers = {**POST_HEADERS, "Accept": "text/event-stream", "Mcp-Session-Id": session_id}
        async with raw.stream("GET", cluster, headers=headers) as stream:
            assert stream.status_code == 200

        async def listens_again() -> bool:  # 409 while the first stream is still open
            async with raw.stream("GET", cluster, headers=headers) as again:
                assert again.status_code in (200, 409)
                return again.status_code == 200

        await until_async(listens_again, "a second GET stream of the session")


async def test_a_killed_replica_is_replaced_and_its_sessions_start_again(cluster):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as raw:
        session_id, killed = await open_session(raw, cluster)
        os.kill(killed, signal.SIGKILL)

        async def gone() -> bool:  # 503 while it is replaced, then 404 from the new one
            try:
                reply = await raw.post(
                    cluster, json=PING, headers={**POST_HEADERS, "Mcp-Session-Id": session_id}
                )
            except httpx2.TimeoutException:  # Ray's proxy held it while the replica restarts
                return False
            assert reply.status_code in (404, 503), reply.text
            return reply.status_code == 404

        await until_async(gone, "the dead replica's session answered 404", timeout=180)

    live: set[int] = set()  # replicas seen answering since the kill

    async def replaced() -> bool:  # REPLICAS live replicas answer: the killed one's successor too
        http, sdk = client(cluster, "auto")
        try:
            async with http, sdk as c:
                pids = {await pid_of(c) for _ in range(3 * REPLICAS)}
        except Exception:
            return False
        assert killed not in pids  # a dead process answers nothing
        live.update(pids)  # the least busy one answers: one look may not see them all
        return len(live) == REPLICAS

    await until_async(replaced, "the killed replica replaced", timeout=180)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
CALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "replica"}}
POST_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Mcp-Protocol-Version": "2025-06-18",
}


async def open_session(raw: httpx2.AsyncClient, url: str) -> tuple[str, int]:
    """A handshake-era session, and the process id of the replica holding it."""
    reply = await raw.post(url, json=INITIALIZE, headers=POST_HEADERS)
    assert reply.status_code == 200, reply.text
    session_id = reply.headers["mcp-session-id"]
    headers = {**POST_HEADERS, "Mcp-Session-Id": session_id}
    await raw.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    called = await raw.post(url, json=CALL, headers=headers)
    assert called.status_code == 200, called.text
    return session_id, int(called.json()["result"]["content"][0]["text"])


def test_replicas_must_be_positive():
    from mcp_notebook.export.ray_serve import build

    with pytest.raises(ValueError, match="at least 1"):
        build("x.notebook", 0)


def test_the_export_writes_its_ray_app(tmp_path):
    out = export(tmp_path)
    assert "build('replicas_mcp.notebook')" in (out / "replicas_mcp" / "ray.py").read_text()
    assert 'ray = ["ray[serve]==' in (out / "pyproject.toml").read_text()


class _Hanging:
    """A replica's answer that never comes (a replica being replaced)."""

    def __init__(self, started: asyncio.Event) -> None:
        self.started = started
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def __aiter__(self) -> _Hanging:
        return self

    async def __anext__(self) -> Any:
        self.started.set()
        await asyncio.Event().wait()


class _Replica:
    """Stands in for a replica deployment's handle: ``options(...).http.remote(...)``."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def options(self, **_: Any) -> _Replica:
        return self

    @property
    def http(self) -> _Replica:
        return self

    def remote(self, scope: Any, body: bytes) -> Any:
        return self.answer()


class _Answered:
    """A replica's whole answer: its status and headers, then one chunk."""

    def __init__(self) -> None:
        self.parts = [(200, [("content-type", "application/json")]), b"{}"]
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def __aiter__(self) -> _Answered:
        return self

    async def __anext__(self) -> Any:
        if not self.parts:
            raise StopAsyncIteration
        return self.parts.pop(0)


def _request() -> Any:
    from starlette.requests import Request

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": [], "query_string": b""}
    return Request(scope, receive)


async def test_a_request_its_client_gave_up_on_no_longer_keeps_its_replica_busy():
    """After a replica was killed, clients gave up on the requests Ray's proxy held for it;
    each cancelled request left its replica counted busy for ever, so least-busy routing
    never sent a new session to the replacement (the killed-replica check above)."""
    from mcp_notebook.export.ray_serve import McpIngress

    started = asyncio.Event()
    hanging = _Hanging(started)
    ingress = McpIngress(_Replica(lambda: hanging), _Replica(_Answered))
    held = asyncio.ensure_future(ingress(_request()))
    await started.wait()
    assert ingress._in_flight == [1, 0]
    held.cancel()
    with pytest.raises(asyncio.CancelledError):
        await held
    assert ingress._in_flight == [0, 0]
    assert hanging.cancelled  # and the replica's call (a tool's, say) does not run on

    # An answer whose client hung up before its body was sent is no longer counted either.
    ingress = McpIngress(_Replica(_Answered), _Replica(_Answered))
    response = await ingress(_request())
    assert sorted(ingress._in_flight) == [0, 1]

    async def gone(message: dict[str, Any]) -> None:
        raise OSError("the client hung up")

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    from starlette.requests import ClientDisconnect

    with pytest.raises((OSError, ClientDisconnect)):  # Starlette names it as it likes
        await response({"type": "http", "asgi": {"spec_version": "2.4"}}, receive, gone)
    assert ingress._in_flight == [0, 0]


class _Listening:
    """A replica's open event stream (a GET stream): its status and headers, then nothing
    until it is cancelled."""

    def __init__(self) -> None:
        self.parts = [(200, [("content-type", "text/event-stream")])]
        self.cancelled = asyncio.Event()

    def __aiter__(self) -> _Listening:
        return self

    async def __anext__(self) -> Any:
        if self.parts:
            return self.parts.pop(0)
        await asyncio.Event().wait()

    def cancel(self) -> None:
        self.cancelled.set()


async def test_a_stream_its_client_closed_is_cancelled_on_its_replica():
    """Ray ended the replica's side of a closed stream only once Python freed the ingress's
    generator: until then a session's GET stream stayed open there, and the session could
    not listen again (409), nor a 2026-07-28 call be cancelled by closing its stream."""
    from mcp_notebook.export.ray_serve import McpIngress

    stream = _Listening()
    ingress = McpIngress(_Replica(lambda: stream))
    response = await ingress(_request())
    began = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        began.set()

    async def receive() -> dict[str, Any]:  # the client hangs up once the stream began
        await began.wait()
        return {"type": "http.disconnect"}

    await response({"type": "http", "asgi": {"spec_version": "2.3"}}, receive, send)
    assert stream.cancelled.is_set()
    assert ingress._in_flight == [0]

    # An answer sent whole has nothing left to cancel.
    whole = _Answered()
    ingress = McpIngress(_Replica(lambda: whole))
    response = await ingress(_request())
    sent: list[dict[str, Any]] = []

    async def keep(message: dict[str, Any]) -> None:
        sent.append(message)

    await response({"type": "http", "asgi": {"spec_version": "2.4"}}, receive, keep)
    assert b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body") == b"{}"
    assert not whole.cancelled


async def _streaming_replica(heard: asyncio.Event) -> Any:
    """A replica whose app opens an event stream and sets ``heard`` on ``http.disconnect``;
    its answer, past the status and headers."""
    from mcp_notebook.export.ray_serve import McpReplica

    async def app(scope: Any, receive: Any, send: Any) -> None:
        assert (await receive())["type"] == "http.request"
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if (await receive())["type"] == "http.disconnect":
            heard.set()

    replica = McpReplica.__new__(McpReplica)  # its app without importing an export
    replica._app = app
    answer = replica.http({"type": "http", "headers": [], "method": "GET"}, b"")
    assert await answer.__anext__() == (200, [])
    return answer


async def test_a_replica_tells_its_app_when_the_client_left():
    """Ray closes a replica's generator when its client leaves; the ASGI app must hear
    ``http.disconnect`` (as under any HTTP server), not be cancelled: cancelling it left a
    2026-07-28 call running, where a closed stream cancels the call."""
    heard = asyncio.Event()
    answer = await _streaming_replica(heard)
    with pytest.raises(asyncio.CancelledError):  # what Ray throws in when the client left
        await answer.athrow(asyncio.CancelledError())
    await asyncio.wait_for(heard.wait(), 30)


async def test_a_replica_cancelled_while_it_waits_tells_its_app_too():
    """Ray's default runs a replica's code on a thread of its own and cancels the task that
    reads this generator, in the middle of its wait for the app's next message: the app
    hears the client left, and nothing of the wait is left pending."""
    heard = asyncio.Event()
    answer = await _streaming_replica(heard)
    reading = asyncio.ensure_future(answer.__anext__())  # waits: the stream sends nothing
    await until(lambda: _waiting_for_a_message(), "the replica waiting for the app")
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    await asyncio.wait_for(heard.wait(), 30)
    await until(lambda: not _waiting_for_a_message(), "the replica's wait ended")


def _waiting_for_a_message() -> bool:
    return any(
        getattr(task.get_coro(), "__qualname__", "") == "Queue.get" and not task.done()
        for task in asyncio.all_tasks()
    )
