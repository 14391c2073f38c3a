"""A relay's own span of each request it forwards, when tracing is on in its process.

``mcp-notebook bridge`` and the Jupyter Server relay, started with the standard ``OTEL_*``
variables that switch tracing on (:mod:`.telemetry`: an exporter named, an OTLP
endpoint), make a CLIENT span per request they relay to the notebook, named and
attributed as the notebook's server span is (:mod:`.spannames`). Its parent is the
client's trace context in ``_meta`` (else in the HTTP headers the relay received); the
forwarded request carries the span's own in ``_meta`` (``traceparent``, ``tracestate``),
where the notebook's server looks first, so its span is the relay's child. The
``mcp.client.operation.duration`` histogram records each, by method (well-known ones,
else ``_OTHER``): a relay cannot tell a notebook's tools from made-up names, so the metric
names none.

Without those variables the relays pass each message through untouched, and nothing of
``opentelemetry`` is imported.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..wire import jsontext
from .spannames import TRACE_KEYS, meta_trace, request_attributes, span_name
from .telemetry import MISSING, configured

logger = logging.getLogger(__name__)

SCOPE = "mcp_notebook.relay"
DURATION = "mcp.client.operation.duration"
BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
# The conventions' well-known methods a client sends (the metric's only method names).
WELL_KNOWN = frozenset(
    {
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
    }
)
Work = Callable[[dict[str, Any]], None]


class Forwarding:
    """A span around each forwarded request, its context injected into the request."""

    def __init__(self, tracer: Any, meter: Any) -> None:
        from opentelemetry import propagate
        from opentelemetry.trace import SpanKind, Status, StatusCode

        self._propagate, self._kind = propagate, SpanKind.CLIENT
        self._status, self._failed = Status, StatusCode.ERROR
        self.tracer = tracer
        self.duration = meter.create_histogram(
            DURATION,
            unit="s",
            description="MCP request duration as observed on the sender (the relay)",
            explicit_bucket_boundaries_advisory=list(BUCKETS),
        )

    @contextlib.contextmanager
    def span(
        self, message: dict[str, Any], headers: Mapping[str, str] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Inside the request's span: ``message`` as it is to be forwarded (a copy with
        the span's trace context in ``_meta``). ``headers``: the trace context to follow
        when ``_meta`` has none (the HTTP request's)."""
        method = message.get("method")
        method = method if isinstance(method, str) else ""
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        attributes = request_attributes(method, message.get("id"), params)
        carrier = meta_trace(params)
        if carrier is None and headers is not None and "traceparent" in headers:
            carrier = {k: headers[k] for k in TRACE_KEYS if k in headers}
        parent = self._propagate.extract(carrier) if carrier is not None else None
        start = time.perf_counter()
        outcome: dict[str, Any] = {"mcp.method.name": method if method in WELL_KNOWN else "_OTHER"}
        with self.tracer.start_as_current_span(
            span_name(method, attributes),
            context=parent,
            kind=self._kind,
            attributes=attributes,
            record_exception=False,
        ) as span:
            injected: dict[str, str] = {}
            self._propagate.inject(injected)
            try:
                yield with_trace(message, params, injected)
            except Exception as exc:
                outcome["error.type"] = type(exc).__qualname__
                span.set_attribute("error.type", outcome["error.type"])
                span.set_status(self._status(self._failed, str(exc)))
                raise
            finally:
                self.duration.record(time.perf_counter() - start, outcome)

    def forward(self, work: Work, message: dict[str, Any]) -> None:
        """Run ``work`` (which relays ``message`` and delivers its reply) inside a span."""
        with self.span(message) as forwarded:
            work(forwarded)

    @contextlib.contextmanager
    def relayed(self, body: bytes, headers: Mapping[str, str]) -> Iterator[bytes]:
        """:meth:`span` for an HTTP body: the body to forward. What is not one JSON-RPC
        request (a notification, a response, a batch, not JSON) goes on as it came."""
        try:
            message = jsontext.loads(body)
        except ValueError:
            message = None
        if not (isinstance(message, dict) and "method" in message and "id" in message):
            yield body
            return
        with self.span(message, headers) as forwarded:
            yield jsontext.dumps(forwarded)


def with_trace(message: dict[str, Any], params: dict[str, Any], injected: dict[str, str]) -> Any:
    """``message`` with ``injected`` as its ``_meta`` trace context (a copy: the client's
    message stays as it was); the client's own ``traceparent`` / ``tracestate`` replaced."""
    meta = params.get("_meta")
    meta = {k: v for k, v in meta.items() if k not in TRACE_KEYS} if isinstance(meta, dict) else {}
    return {**message, "params": {**params, "_meta": {**meta, **injected}}}


def from_environment(environ: Any = None) -> Forwarding | None:
    """The relay's tracing if ``OTEL_*`` switch it on and the API is installed, else None."""
    environ = os.environ if environ is None else environ
    if not configured(environ):
        return None
    try:
        from opentelemetry import metrics, trace

        from .otelsdk import configure
    except ImportError:
        logger.warning("OTEL_* asks for traces, but %s", MISSING)
        return None
    configure(environ)
    return Forwarding(trace.get_tracer(SCOPE), metrics.get_meter(SCOPE))
