"""A relay's own span of each forwarded request (protocol/forwarding.py): a CLIENT span in
the client's trace whose context the forwarded request carries in ``_meta``; untraced,
the bridge forwards ``_meta`` as the client sent it; what the Jupyter Server relay cannot
read as one request goes on as it came. Against a scripted endpoint; with a real kernel
and a real bridge process in tests/kernel/test_tracing.py, through a real Jupyter Server
in tests/e2e/jupyter/test_relay.py."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from mcp_notebook.bridge import Bridge, Target
from mcp_notebook.protocol.forwarding import Forwarding, from_environment
from tests.stdio import INITIALIZE, FakeNotebook, Seen, json_body
from tests.unit.protocol.test_tracing import metric_points
from tests.waiting import wait_until

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
META = {"traceparent": f"00-{TRACE_ID}-{CLIENT_SPAN}-01", "tracestate": "k=v", "other": 1}


def answer(seen: Seen) -> tuple[Any, ...]:
    body = seen.body if isinstance(seen.body, dict) else {}
    if "id" not in body:
        return 202, "application/json", b""
    reply = json_body({"jsonrpc": "2.0", "id": body["id"], "result": {"content": []}})
    return 200, "application/json", reply, {"Mcp-Session-Id": "s-1"}


@pytest.fixture
def notebook() -> Iterator[FakeNotebook]:
    fake = FakeNotebook(answer)
    yield fake
    fake.close()


def call(request_id: Any, name: str, meta: dict[str, Any] | None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {}}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def relay(notebook: FakeNotebook, tracing: Forwarding | None, *messages: Any) -> list[Seen]:
    bridge = Bridge(Target(url=notebook.url), io.BytesIO(), tracing=tracing)
    bridge.feed(INITIALIZE)
    for message in messages:
        bridge.feed(message)
    assert bridge.settle(30)
    bridge.close()
    wait_until(lambda: len(notebook.posted("tools/call")) == len(messages), "forwarded")
    return notebook.posted("tools/call")


def test_untraced_the_bridge_forwards_meta_untouched(notebook: FakeNotebook) -> None:
    assert from_environment({}) is None  # no OTEL_*: no tracing
    (seen,) = relay(notebook, None, call(2, "add", META))
    assert seen.body["params"]["_meta"] == META


def test_traced_the_forwarded_request_is_the_child_of_the_bridges_span(
    notebook: FakeNotebook,
) -> None:
    exported, reader = InMemorySpanExporter(), InMemoryMetricReader()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    tracer = provider.get_tracer("test")
    tracing = Forwarding(tracer, MeterProvider(metric_readers=[reader]).get_meter("test"))
    sent = call(2, "add", META)
    bare = call(3, "made-up", None)
    seen = {s.body["id"]: s.body for s in relay(notebook, tracing, sent, bare)}
    spans = {s.name: s for s in exported.get_finished_spans()}

    bridge = spans["tools/call add"]
    assert bridge.kind is SpanKind.CLIENT
    assert format(bridge.context.trace_id, "032x") == TRACE_ID
    assert bridge.parent is not None and format(bridge.parent.span_id, "016x") == CLIENT_SPAN
    meta = seen[2]["params"]["_meta"]
    assert meta["traceparent"] == f"00-{TRACE_ID}-{bridge.context.span_id:016x}-01"
    assert meta["tracestate"] == "k=v" and meta["other"] == 1  # the rest as it was
    assert sent["params"]["_meta"] == META  # the client's message is not changed

    # A request without a trace context starts one; the bridge's span is its root.
    alone = spans["tools/call made-up"]
    assert alone.parent is None
    assert (
        seen[3]["params"]["_meta"]["traceparent"].split("-")[2] == f"{alone.context.span_id:016x}"
    )

    # The client-side duration: one series per method, no tool names (the bridge cannot
    # tell the notebook's tools from made-up ones).
    points = metric_points(reader, "mcp.client.operation.duration")
    by_method = {p.attributes["mcp.method.name"]: p.count for p in points}
    assert by_method["tools/call"] == 2
    assert all("gen_ai.tool.name" not in p.attributes for p in points)


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]',
        b"[" * 5000 + b"]" * 5000,
    ],
    ids=["not JSON", "a notification", "a batch", "too deep"],
)
def test_the_relay_passes_what_is_not_one_request_as_it_came(body: bytes) -> None:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    tracing = Forwarding(provider.get_tracer("test"), MeterProvider().get_meter("test"))
    with tracing.relayed(body, {"traceparent": META["traceparent"]}) as relayed:
        assert relayed is body
    assert exported.get_finished_spans() == ()


def test_the_relay_follows_the_header_when_meta_has_no_trace_context() -> None:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    tracing = Forwarding(provider.get_tracer("test"), MeterProvider().get_meter("test"))
    body = json_body(call(4, "add", None))
    with tracing.relayed(body, {"traceparent": META["traceparent"]}) as relayed:
        forwarded = json.loads(relayed)
    (span,) = exported.get_finished_spans()
    assert span.parent is not None and format(span.parent.span_id, "016x") == CLIENT_SPAN
    sent = forwarded["params"]["_meta"]["traceparent"]
    assert sent == f"00-{TRACE_ID}-{span.context.span_id:016x}-01"
