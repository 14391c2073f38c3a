"""One trace from a client's span into the kernel's: the SDK client's call carries
``_meta.traceparent``, straight over HTTP and through ``mcp-notebook bridge``, and the
spans the notebook's server makes in the kernel continue that trace. A bridge with
tracing on (``OTEL_*``) is a span of that trace itself, between the client's and the
kernel's."""

from __future__ import annotations

import json
import re
import tempfile
from typing import Any

import pytest
from mcp.client import Client
from mcp.client.stdio import stdio_client
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from tests.conftest import MODES, connect, start_server
from tests.sources import ADD_INTS
from tests.stdio import module_params
from tests.waiting import until

# Run in a kernel with mcp_notebook loaded: its spans go to memory, spans_of reads them.
TRACED_IN_MEMORY = '''
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exported = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exported))
mcp.tracing(tracer_provider=provider)

def spans_of(trace_id):
    """(name, parent span id, own span id) of the kernel's spans in that trace."""
    return [
        (s.name, s.parent and format(s.parent.span_id, "016x"), format(s.context.span_id, "016x"))
        for s in exported.get_finished_spans()
        if format(s.context.trace_id, "032x") == trace_id
    ]
'''
SETUP = TRACED_IN_MEMORY + "\n" + ADD_INTS


@pytest.fixture(scope="module")
def served(kernel):
    return start_server(kernel, SETUP, "%mcp start --port 0 --name traced")


def client_span() -> tuple[Any, dict[str, str]]:
    """A span of the client's own (its SDK's, in this process) and its W3C context."""
    span = TracerProvider().get_tracer("agent").start_span("agent step")
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier, context=trace.set_span_in_context(span))
    return span, carrier


def check_one_trace(kernel: Any, span: Any, tool: str = "add") -> None:
    trace_id = format(span.get_span_context().trace_id, "032x")
    client_id = format(span.get_span_context().span_id, "016x")
    spans = {name: (parent, own) for name, parent, own in kernel.eval(f"spans_of({trace_id!r})")}
    server_parent, server_id = spans[f"tools/call {tool}"]
    assert server_parent == client_id  # the kernel's server span continues the client's
    assert spans[f"run {tool}"][0] == server_id  # and the run on the kernel is its child


@MODES
async def test_the_kernels_spans_continue_the_clients_trace(served, mode):
    span, meta = client_span()
    async with connect(served, mode) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3}, meta=meta)
    span.end()
    assert result.content[0].text == "5"
    check_one_trace(served.kernel, span)


@MODES
async def test_the_bridge_carries_the_trace_context_into_the_kernel(served, mode):
    span, meta = client_span()
    async with Client(module_params("bridge", "traced"), mode=mode) as client:
        result = await client.call_tool("add", {"a": 20, "b": 22}, meta=meta)
    span.end()
    assert result.content[0].text == "42"
    check_one_trace(served.kernel, span)


def console_spans(text: str) -> list[dict[str, Any]]:
    """The spans the SDK's console exporter printed (one indented JSON object each, its
    braces at the start of a line), among whatever else went to stderr."""
    decoder, spans = json.JSONDecoder(), []
    for start in re.finditer(r"^\{", text, re.MULTILINE):
        try:
            found, _ = decoder.raw_decode(text, start.start())
        except ValueError:
            continue
        if isinstance(found, dict) and "context" in found:
            spans.append(found)
    return spans


@MODES
async def test_a_traced_bridge_is_the_span_between_the_client_and_the_kernel(served, mode):
    params = module_params("bridge", "traced")
    params.env = {
        **(params.env or {}),
        "OTEL_TRACES_EXPORTER": "console",  # to the bridge's stderr: its stdout is MCP's
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_BSP_SCHEDULE_DELAY": "10",  # exported at once, not only at exit
        "OTEL_SERVICE_NAME": "the-bridge",
    }
    span, meta = client_span()
    trace_id = format(span.get_span_context().trace_id, "032x")
    with tempfile.TemporaryFile("w+") as stderr:
        async with Client(stdio_client(params, errlog=stderr), mode=mode) as client:
            result = await client.call_tool("add", {"a": 1, "b": 41}, meta=meta)
            assert result.content[0].text == "42"

            def bridge_call() -> dict[str, Any] | None:
                stderr.seek(0)
                calls = [s for s in console_spans(stderr.read()) if s["name"] == "tools/call add"]
                return calls[0] if calls else None

            forwarded = await until(bridge_call, "the bridge's span on its stderr")
    span.end()
    assert forwarded["kind"] == "SpanKind.CLIENT"
    assert forwarded["resource"]["attributes"]["service.name"] == "the-bridge"
    assert forwarded["attributes"]["gen_ai.tool.name"] == "add"
    assert forwarded["context"]["trace_id"] == f"0x{trace_id}"
    assert forwarded["parent_id"] == f"0x{span.get_span_context().span_id:016x}"
    bridge_id = forwarded["context"]["span_id"].removeprefix("0x")
    spans = {
        name: (parent, own) for name, parent, own in served.kernel.eval(f"spans_of({trace_id!r})")
    }
    server_parent, server_id = spans["tools/call add"]
    assert server_parent == bridge_id  # the kernel's span is the bridge's child
    assert spans["run add"][0] == server_id
