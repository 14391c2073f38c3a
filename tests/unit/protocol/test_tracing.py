"""OpenTelemetry spans and metrics of the requests (protocol/tracing.py), read back with
the SDK's in-memory exporters; without tracing nothing of OpenTelemetry is imported."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import InlineExecutor, Server, Session, modern
from mcp_notebook.protocol.calls import CallRecord
from mcp_notebook.protocol.interceptors import ToolCall
from mcp_notebook.protocol.names import META_CAPABILITIES, META_VERSION
from mcp_notebook.protocol.telemetry import TracingSettings, apply, configured

_ids = itertools.count(1)
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


class Traced:
    """A server whose spans and metrics land in memory."""

    def __init__(self, executor: Any = None) -> None:
        self.mcp = NotebookMCP()
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.server = Server(self.mcp.registry, executor=executor or InlineExecutor())
        settings = TracingSettings(True, provider, MeterProvider(metric_readers=[self.reader]))
        assert apply(settings, self.server)
        self.session = Session()

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(_ids), "method": method}
        if params is not None:
            message["params"] = params
        reply = await self.server.handle(message, self.session)
        assert reply is not None
        return reply

    async def initialize(self) -> None:
        await self.send(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        )

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def span(self, name: str) -> ReadableSpan:
        found = [s for s in self.spans() if s.name == name]
        assert len(found) == 1, [s.name for s in self.spans()]
        return found[0]

    def children(self, parent: ReadableSpan) -> dict[str, ReadableSpan]:
        parent_id = parent.context.span_id
        return {s.name: s for s in self.spans() if s.parent and s.parent.span_id == parent_id}


def tools(traced: Traced) -> None:
    @traced.mcp.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @traced.mcp.tool
    def fail() -> int:
        """Always fails."""
        raise ValueError("no luck")


async def test_initialize_is_a_server_span_with_the_session_and_version() -> None:
    traced = Traced()
    await traced.initialize()
    span = traced.span("initialize")
    assert span.kind is SpanKind.SERVER
    attributes = dict(span.attributes or {})
    assert attributes["mcp.method.name"] == "initialize"
    assert attributes["jsonrpc.request.id"].isdigit()
    assert attributes["mcp.session.id"] == traced.session.id
    assert attributes["mcp.protocol.version"] == "2025-11-25"
    assert span.status.status_code is StatusCode.UNSET


async def test_a_tool_call_names_the_tool_and_has_its_run_as_a_child() -> None:
    traced = Traced()
    tools(traced)
    await traced.initialize()
    reply = await traced.send("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert reply["result"]["structuredContent"] == {"result": 3}
    span = traced.span("tools/call add")
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.tool.name"] == "add"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert "error.type" not in attributes
    run = traced.children(span)["run add"]
    assert span.start_time <= run.start_time <= run.end_time <= span.end_time
    assert run.context.trace_id == span.context.trace_id


async def test_a_tool_error_and_an_unknown_tool_mark_the_span_as_an_error() -> None:
    traced = Traced()
    tools(traced)
    await traced.initialize()
    failed = await traced.send("tools/call", {"name": "fail", "arguments": {}})
    assert failed["result"]["isError"] is True
    unknown = await traced.send("tools/call", {"name": "nope", "arguments": {}})
    assert unknown["error"]["code"] == -32602
    tool_error = traced.span("tools/call fail")
    assert tool_error.status.status_code is StatusCode.ERROR
    assert (tool_error.attributes or {})["error.type"] == "tool_error"
    refused = traced.span("tools/call nope")
    assert refused.status.status_code is StatusCode.ERROR
    assert (refused.attributes or {})["error.type"] == "-32602"
    assert (refused.attributes or {})["rpc.response.status_code"] == "-32602"


async def test_a_resource_read_carries_its_uri() -> None:
    traced = Traced()
    traced.mcp.resource("hello", name="today", uri="notes://today")
    await traced.initialize()
    await traced.send("resources/read", {"uri": "notes://today"})
    span = traced.span("resources/read")
    assert (span.attributes or {})["mcp.resource.uri"] == "notes://today"


async def test_the_span_continues_the_trace_in_the_requests_meta() -> None:
    traced = Traced()
    tools(traced)
    await traced.initialize()
    meta = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01", "tracestate": "vendor=1"}
    await traced.send("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": meta})
    span = traced.span("tools/call add")
    assert f"{span.context.trace_id:032x}" == TRACE_ID
    assert span.parent is not None and f"{span.parent.span_id:016x}" == PARENT_ID
    assert span.context.trace_state.get("vendor") == "1"
    # without a traceparent, a request starts its own trace
    assert f"{traced.span('initialize').context.trace_id:032x}" != TRACE_ID


async def test_waiting_for_a_person_is_a_child_span() -> None:
    traced = Traced()
    tools(traced)
    await traced.initialize()
    asked, decide = asyncio.Event(), asyncio.Event()

    async def person(call: ToolCall) -> dict[str, Any]:
        assert call.record is not None
        call.record.set_status("awaiting confirmation")  # as the notebook's Confirmer does
        asked.set()
        await decide.wait()
        return call.arguments

    traced.server.confirm = person
    call = asyncio.ensure_future(
        traced.send("tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}})
    )
    await asked.wait()
    decide.set()
    await call
    children = traced.children(traced.span("tools/call add"))
    wait, run = children["wait for confirmation"], children["run add"]
    assert wait.end_time <= run.start_time


class BusyKernel(InlineExecutor):
    """A kernel busy with a cell: calls wait until ``free`` is set."""

    def __init__(self) -> None:
        self.free, self.waiting = asyncio.Event(), asyncio.Event()

    async def run(self, work: Any, record: CallRecord | None = None) -> Any:
        self.waiting.set()
        await self.free.wait()
        return await super().run(work, record)


async def test_waiting_for_the_kernel_is_a_child_span() -> None:
    kernel = BusyKernel()
    traced = Traced(kernel)
    tools(traced)
    await traced.initialize()
    call = asyncio.ensure_future(
        traced.send("tools/call", {"name": "add", "arguments": {"a": 3, "b": 3}})
    )
    await kernel.waiting.wait()
    assert "wait for the kernel" not in {s.name for s in traced.spans()}
    kernel.free.set()
    await call
    children = traced.children(traced.span("tools/call add"))
    queued, run = children["wait for the kernel"], children["run add"]
    assert queued.end_time <= run.start_time


async def test_the_duration_metric_has_the_spans_attributes() -> None:
    traced = Traced()
    tools(traced)
    await traced.initialize()
    await traced.send("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    await traced.send("tools/call", {"name": "fail", "arguments": {}})
    points = metric_points(traced.reader, "mcp.server.operation.duration")
    by_tool = {(p.attributes or {}).get("gen_ai.tool.name"): p for p in points}
    assert by_tool["add"].count == 1 and "error.type" not in (by_tool["add"].attributes or {})
    assert (by_tool["fail"].attributes or {})["error.type"] == "tool_error"
    assert all("jsonrpc.request.id" not in (p.attributes or {}) for p in points)


def metric_points(reader: InMemoryMetricReader, name: str) -> list[Any]:
    """The data points of the metric ``name`` that ``reader`` holds."""
    data = reader.get_metrics_data()
    assert data is not None
    return [
        point
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == name
        for point in metric.data.data_points
    ]


async def test_a_closed_session_records_its_duration() -> None:
    traced = Traced()
    traced.session.transport = "http"
    traced.server.open_session(traced.session)
    await traced.initialize()
    assert metric_points(traced.reader, "mcp.server.session.duration") == []  # still open
    traced.server.close_session(traced.session.id)
    (point,) = metric_points(traced.reader, "mcp.server.session.duration")
    assert point.count == 1 and point.sum >= 0
    # Bounded: the version and the transport, never the session's id.
    assert dict(point.attributes or {}) == {
        "mcp.protocol.version": "2025-11-25",
        "network.transport": "tcp",
    }


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, False),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_SDK_DISABLED": "true"}, False),
    ],
)
def test_the_standard_environment_switches_tracing_on(
    environ: dict[str, str], wanted: bool
) -> None:
    assert configured(environ) is wanted


UNTRACED = textwrap.dedent(
    """
    import asyncio, sys
    from mcp_notebook import NotebookMCP
    from mcp_notebook.export.runtime import server_of
    from mcp_notebook.protocol import Session

    mcp = NotebookMCP()
    mcp.tool(lambda a: a, name="echo")
    server = server_of(mcp, inline=True)
    session = Session()
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"a": 1}}}
    reply = asyncio.run(server.handle(call, session))
    assert reply["result"]["content"], reply
    print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
    """
)


def test_without_tracing_nothing_of_opentelemetry_is_imported() -> None:
    environ = {"PATH": "", "PYTHONPATH": ":".join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", UNTRACED], capture_output=True, text=True, env=environ, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


async def test_tracing_switched_on_reaches_the_running_server() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    mcp = NotebookMCP()
    server = Server(mcp.registry)
    mcp._server = server  # what %mcp start keeps
    mcp.tracing(tracer_provider=provider)
    await server.handle({"jsonrpc": "2.0", "id": 1, "method": "ping"}, Session())
    assert [s.name for s in exporter.get_finished_spans()] == ["ping"]


async def test_made_up_methods_and_tools_add_no_metric_series() -> None:
    traced = Traced()
    tools(traced)
    await traced.initialize()
    for n in range(50):
        await traced.send(f"made/up{n}")
        await traced.send("tools/call", {"name": f"nope{n}", "arguments": {}})
        await traced.send("prompts/get", {"name": f"nope{n}"})
    data = traced.reader.get_metrics_data()
    assert data is not None
    series = [
        dict(point.attributes or {})
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        for point in metric.data.data_points
    ]
    assert len(series) <= 4, series  # initialize, _OTHER, tools/call and prompts/get refused
    assert {s["mcp.method.name"] for s in series} >= {"_OTHER", "tools/call"}
    # the spans keep what the client asked for
    assert (traced.span("made/up7").attributes or {})["error.type"] == "-32601"
    assert "tools/call nope7" in {s.name for s in traced.spans()}


@pytest.mark.parametrize("traceparent", ["garbage", 42, "00-" + "0" * 32 + "-" + "0" * 16 + "-01"])
async def test_a_malformed_traceparent_starts_a_new_trace(traceparent: Any) -> None:
    traced = Traced()
    tools(traced)
    await traced.initialize()
    meta = {"traceparent": traceparent, "tracestate": ["not", "a", "string"]}
    params = {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": meta}
    reply = await traced.send("tools/call", params)
    assert reply["result"]["structuredContent"] == {"result": 2}
    span = traced.span("tools/call add")
    assert span.parent is None and span.context.trace_id != 0


def test_the_standard_environment_alone_exports_the_spans() -> None:
    environ = {
        "PATH": "",
        "PYTHONPATH": ":".join(sys.path),
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_SERVICE_NAME": "notebook-under-test",
    }
    done = subprocess.run(
        [sys.executable, "-c", UNTRACED], capture_output=True, text=True, env=environ, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert '"name": "tools/call echo"' in done.stdout
    assert '"service.name": "notebook-under-test"' in done.stdout


def test_otel_variables_without_the_extra_leave_the_server_untraced(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317")
    monkeypatch.setitem(sys.modules, "mcp_notebook.protocol.tracing", None)  # not installed
    server = Server(NotebookMCP().registry)
    assert apply(TracingSettings(), server) is False
    assert "pip install 'mcp-notebook[otel]'" in caplog.text
    with pytest.raises(ImportError, match=r"mcp-notebook\[otel\]"):
        apply(TracingSettings(True), server)  # asked for in a cell: said at once


def test_a_missing_exporter_is_logged_and_the_call_still_served() -> None:
    environ = {"PATH": "", "PYTHONPATH": ":".join(sys.path), "OTEL_TRACES_EXPORTER": "nosuch"}
    done = subprocess.run(
        [sys.executable, "-c", UNTRACED], capture_output=True, text=True, env=environ, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "no OpenTelemetry exporter 'nosuch'" in done.stderr


async def test_a_2026_request_has_its_version_and_no_session() -> None:
    traced = Traced()
    tools(traced)
    meta = {META_VERSION: "2026-07-28", META_CAPABILITIES: {}}
    message = {
        "jsonrpc": "2.0",
        "id": "call-1",
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta},
    }
    reply = await traced.server.handle(message, modern.open_request(message))
    assert reply is not None and "result" in reply, reply
    attributes = dict(traced.span("tools/call add").attributes or {})
    assert attributes["mcp.protocol.version"] == "2026-07-28"
    assert attributes["jsonrpc.request.id"] == "call-1"
    assert "mcp.session.id" not in attributes


async def test_a_task_s_run_is_a_child_span_when_it_ends_after_the_reply() -> None:
    traced = Traced()
    release = asyncio.Event()

    @traced.mcp.tool
    async def gate() -> str:
        """Waits for the test."""
        await release.wait()
        return "through"

    traced.session = traced.server.open_session(Session())
    traced.session.outbound = lambda message, related: True  # task status notifications
    await traced.initialize()
    created = await traced.send("tools/call", {"name": "gate", "arguments": {}, "task": {}})
    task_id = created["result"]["task"]["taskId"]
    request = traced.span("tools/call gate")  # answered with the task, the call goes on
    assert "run gate" not in traced.children(request)
    release.set()
    done = await traced.send("tasks/result", {"taskId": task_id})
    assert done["result"]["content"][0]["text"] == "through"
    run = traced.children(request)["run gate"]
    assert run.end_time > request.end_time
