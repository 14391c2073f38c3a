"""OpenTelemetry spans and metrics of every MCP request (the optional ``[otel]`` extra).

Imported only when tracing is switched on (:mod:`.telemetry` decides): a server without
it never imports ``opentelemetry`` and its request path is unchanged.

Names and attributes follow the OpenTelemetry semantic conventions for MCP
(open-telemetry/semantic-conventions-genai v0.1.0, ``docs/gen-ai/mcp.md``; Development
status): one SERVER span per request or notification, named ``{mcp.method.name}
{target}`` (the tool or prompt name), parented by the W3C trace context in the request's
``params._meta`` (``traceparent``, ``tracestate``), else in its HTTP headers. A
``tools/call`` gets child spans for what its record went through: waiting for the kernel
(``queued``), waiting for a person (``awaiting confirmation``) and running. The
``mcp.server.operation.duration`` histogram (seconds; its count is the number of
operations) carries the span's low-cardinality attributes; ``mcp.server.session.duration``
(seconds) records each handshake-era session when it closes.
"""

from __future__ import annotations

import itertools
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry import metrics, propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from ..registry import Registry
from .calls import CallLog, CallRecord
from .interceptors import Next, ToolCall
from .kinds import FINAL_STATUSES, Era
from .outcomes import Result
from .request import RequestContext
from .session import Session
from .spannames import meta_trace, request_attributes, span_name

Dispatch = Callable[[Any, RequestContext], Awaitable[Any]]

SCOPE = "mcp_notebook"
DURATION = "mcp.server.operation.duration"
SESSION_DURATION = "mcp.server.session.duration"
# network.transport of a session, by Session.transport ("tcp" for HTTP, "pipe" for stdio).
NETWORK = {"http": "tcp", "http-seed": "tcp", "stdio": "pipe"}
# The conventions' recommended bucket boundaries for mcp.server.operation.duration.
BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
# The statuses of a call's record that become child spans, with the span's name.
PHASES = {
    "queued": "wait for the kernel",
    "awaiting confirmation": "wait for confirmation",
    "running": "run",
}
OTHER = "_OTHER"  # a method the server does not know, in the metric
NOTIFICATIONS = frozenset({"notifications/initialized", "notifications/cancelled"})
TOOL_ERROR = "tool_error"  # error.type of a tool result with isError (the conventions')
# The attributes the duration metric keeps (bounded cardinality: no ids, no URIs).
METRIC_KEYS = (
    "mcp.method.name",
    "gen_ai.tool.name",
    "gen_ai.prompt.name",
    "gen_ai.operation.name",
    "mcp.protocol.version",
    "error.type",
    "rpc.response.status_code",
)


class _Phases:
    """What a traced tool call's record went through: ``steps``, (status, time_ns)."""

    __slots__ = ("context", "detached", "steps", "tool", "tracer")

    def __init__(self, tracer: Any, context: Any, tool: str, status: str) -> None:
        self.tracer, self.context, self.tool = tracer, context, tool
        self.steps = [(status, time.time_ns())]
        # The request was answered before its call ended (a task): the span of what is
        # left is made when the record ends, by the call log's observer.
        self.detached = False

    def spans(self) -> None:
        """A child span of the request's for each phase (explicit start and end times)."""
        self.steps.append(("", time.time_ns()))
        for (status, start), (_, end) in itertools.pairwise(self.steps):
            phase = PHASES.get(status)
            if phase is not None:
                name = f"{phase} {self.tool}" if status == "running" else phase
                span = self.tracer.start_span(name, context=self.context, start_time=start)
                span.end(end_time=end)


# The traced tool calls in flight only (of every traced server: one observer per call
# log, however often a server restarts). Popping an entry claims its spans.
_LIVE: dict[CallRecord, _Phases] = {}
_OBSERVED: weakref.WeakSet[CallLog] = weakref.WeakSet()


def observe(calls: CallLog) -> None:
    """Note the status changes of traced calls in ``calls`` (once per call log)."""
    if calls not in _OBSERVED:
        _OBSERVED.add(calls)
        calls.subscribe(_changed)


def _changed(record: CallRecord) -> None:
    """A call log observer (any thread): when a traced call changes status."""
    phases = _LIVE.get(record)
    if phases is None:
        return
    phases.steps.append((record.status, time.time_ns()))
    if phases.detached and record.status in FINAL_STATUSES:
        _claimed(record)


def _claimed(record: CallRecord) -> None:
    phases = _LIVE.pop(record, None)
    if phases is not None:
        phases.spans()


class Tracing:
    """One server's spans and metrics: its dispatch wrapper and its tool-call interceptor.

    ``known(method, era)`` and the ``registry``'s tools and prompts say which names the
    metric may carry: a client's made-up method or tool name is not a new series."""

    def __init__(
        self,
        known: Callable[[str, Era], bool],
        registry: Registry,
        tracer_provider: Any = None,
        meter_provider: Any = None,
    ) -> None:
        self.known, self.registry = known, registry
        self.tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, meter_provider=meter_provider)
        self.duration = meter.create_histogram(
            DURATION,
            unit="s",
            description="MCP request or notification duration as observed on the server",
            explicit_bucket_boundaries_advisory=list(BUCKETS),
        )
        self.session_duration = meter.create_histogram(
            SESSION_DURATION,
            unit="s",
            description="The duration of the MCP session as observed on the MCP server",
            explicit_bucket_boundaries_advisory=list(BUCKETS),
        )

    def session_ended(self, session: Session) -> None:
        """A handshake-era session closed (2026-07-28 has none: each request stands alone)."""
        attributes = {}
        if session.protocol_version:
            attributes["mcp.protocol.version"] = session.protocol_version
        network = NETWORK.get(session.transport)
        if network is not None:
            attributes["network.transport"] = network
        self.session_duration.record(max(0.0, time.time() - session.created), attributes)

    def wrap(self, dispatch: Dispatch) -> Dispatch:
        """``dispatch`` inside a server span per request or notification."""

        async def traced(message: Any, request: RequestContext) -> Any:
            method = message.get("method") if isinstance(message, dict) else None
            if not isinstance(method, str):
                return await dispatch(message, request)  # a response, or malformed
            params = message.get("params")
            params = params if isinstance(params, dict) else {}
            attributes = request_attributes(method, message.get("id"), params)
            name = span_name(method, attributes)
            start = time.perf_counter()
            with self.tracer.start_as_current_span(
                name,
                context=_parent(params, request),
                kind=SpanKind.SERVER,
                attributes=attributes,
                record_exception=False,
            ) as span:
                reply = await dispatch(message, request)
                attributes.update(_outcome(span, reply, request))
            self.duration.record(time.perf_counter() - start, self._bounded(attributes, request))
            return reply

        return traced

    def _bounded(self, attributes: dict[str, Any], request: RequestContext) -> dict[str, Any]:
        """The metric's attributes: names the server knows, else ``_OTHER`` or none."""
        kept = {k: attributes[k] for k in METRIC_KEYS if k in attributes}
        method = kept["mcp.method.name"]
        if not (self.known(method, request.session.era) or method in NOTIFICATIONS):
            kept["mcp.method.name"] = OTHER
        if kept.get("gen_ai.tool.name") not in self.registry.tools:
            kept.pop("gen_ai.tool.name", None)
        if kept.get("gen_ai.prompt.name") not in self.registry.prompts:
            kept.pop("gen_ai.prompt.name", None)
        return kept

    # -- tools/call's phases: an interceptor outermost around the run --------------------
    async def phases(self, call: ToolCall, after: Next) -> Result:
        record = call.record
        assert record is not None  # plugged around the run: the call is recorded
        here = trace.set_span_in_context(trace.get_current_span())
        phases = _LIVE[record] = _Phases(self.tracer, here, call.name, record.status)
        try:
            return await after(call)
        finally:
            # Detached first, then looked at: the observer or this claims the spans, once.
            phases.detached = True
            if record.status in FINAL_STATUSES:
                _claimed(record)


def _parent(params: dict[str, Any], request: RequestContext) -> Any:
    """The W3C trace context in ``params._meta``, else in the HTTP request's headers,
    through the configured propagator. ``_meta`` wins: it is where the MCP conventions
    carry it, and it stays with the message through relays that make their own HTTP
    requests. A malformed one gives a context without a parent: a trace of its own."""
    carrier = meta_trace(params)
    if carrier is None:
        carrier = request.trace
    if carrier is None:
        return None  # the current context: a span the transport opened, or none
    return propagate.extract(carrier)


def _outcome(span: Any, reply: Any, request: RequestContext) -> dict[str, Any]:
    """The attributes known once the request is answered; the span's error status."""
    session = request.session
    # A 2026-07-28 request has no session: its Session is of that request alone.
    found: dict[str, Any] = {} if session.era == "modern" else {"mcp.session.id": session.id}
    if session.protocol_version:
        found["mcp.protocol.version"] = session.protocol_version
    error: Any = None
    if isinstance(reply, dict):
        failure, result = reply.get("error"), reply.get("result")
        if isinstance(failure, dict):
            code = str(failure.get("code"))
            found["error.type"] = found["rpc.response.status_code"] = code
            error = failure.get("message")
        elif isinstance(result, dict) and result.get("isError") is True:
            found["error.type"] = TOOL_ERROR
            error = "the tool reported an error"
    span.set_attributes(found)
    if error is not None:
        span.set_status(Status(StatusCode.ERROR, str(error)))
    return found
