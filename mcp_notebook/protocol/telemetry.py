"""Whether a server is traced, and switching it on: no ``opentelemetry`` import here.

Tracing is on when asked for (``mcp.tracing()``, a tracer or meter provider given) or
when the standard OpenTelemetry environment names an exporter (``OTEL_TRACES_EXPORTER``
other than ``none``, or ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``..._TRACES_ENDPOINT``) and
``OTEL_SDK_DISABLED`` is not true. Only then is :mod:`.tracing` (and with it
``opentelemetry``) imported; a server without tracing has no wrapper and no interceptor.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import Server

logger = logging.getLogger(__name__)
ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
MISSING = (
    "tracing needs the OpenTelemetry API: pip install 'mcp-notebook[otel]' "
    "(opentelemetry-api and opentelemetry-sdk)"
)
# The servers traced so far (a server is traced at most once).
TRACED: weakref.WeakSet[Server] = weakref.WeakSet()


@dataclass
class TracingSettings:
    """What ``mcp.tracing(...)`` chose; ``on`` None: as the environment says."""

    on: bool | None = None
    tracer_provider: Any = None
    meter_provider: Any = None

    def wanted(self, environ: Mapping[str, str] | None = None) -> bool:
        if self.on is not None:
            return self.on
        if self.tracer_provider is not None or self.meter_provider is not None:
            return True
        return configured(os.environ if environ is None else environ)


def configured(environ: Mapping[str, str]) -> bool:
    """Whether the standard OTEL_* variables ask for traces to be exported."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return any(environ.get(name, "").strip() for name in ENDPOINTS)


def apply(settings: TracingSettings, server: Server) -> bool:
    """Trace ``server``'s requests if ``settings`` want it (once per server); whether it is."""
    if server in TRACED:
        return True
    if not settings.wanted():
        return False
    try:
        from .tracing import Tracing, observe
    except ImportError as exc:
        if settings.on is None and settings.tracer_provider is None:
            logger.warning("OTEL_* asks for traces, but %s", MISSING)  # serve untraced
            return False
        raise ImportError(MISSING) from exc
    if settings.on is None and settings.tracer_provider is None:
        from .otelsdk import configure  # switched on by OTEL_*: the SDK as they say

        configure(os.environ)
    tracing = Tracing(
        server.serves, server.registry, settings.tracer_provider, settings.meter_provider
    )
    TRACED.add(server)
    server.traced = True
    server.around_dispatch(tracing.wrap)
    server.intercept(tracing.phases)  # outermost around the run
    server.session_closed.append(tracing.session_ended)
    observe(server.calls)
    return True
