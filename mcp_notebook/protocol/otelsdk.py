"""The OpenTelemetry SDK set up from the standard ``OTEL_*`` variables, when nobody did.

A process that ``opentelemetry-instrument`` started, or whose code set global providers,
keeps them. Otherwise, with tracing switched on by the environment, the exporters that
``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` name (default ``otlp``; ``console``
comes with the SDK, ``otlp`` with ``opentelemetry-exporter-otlp``) are found by their
entry points, as the SDK's own auto-configuration finds them; the exporters, the batch
processor and the resource (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``) read
the rest of the environment themselves.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

logger = logging.getLogger(__name__)
TRACES_GROUP = "opentelemetry_traces_exporter"
METRICS_GROUP = "opentelemetry_metrics_exporter"


def configure(environ: Mapping[str, str]) -> None:
    """Global tracer and meter providers from ``environ``, unless some are set already."""
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        exporters = _exporters(TRACES_GROUP, environ.get("OTEL_TRACES_EXPORTER", "otlp"))
        if exporters:
            provider = TracerProvider()
            for exporter in exporters:
                provider.add_span_processor(BatchSpanProcessor(exporter))
            trace.set_tracer_provider(provider)
    # The API has no public name for "not set yet" of meters: its proxy's class says so.
    if type(metrics.get_meter_provider()).__name__ == "_ProxyMeterProvider":
        names = environ.get("OTEL_METRICS_EXPORTER", "otlp")
        readers = [PeriodicExportingMetricReader(e) for e in _exporters(METRICS_GROUP, names)]
        if readers:
            metrics.set_meter_provider(MeterProvider(metric_readers=readers))


def _exporters(group: str, names: str) -> list[Any]:
    found = []
    for name in (n.strip() for n in names.split(",")):
        if not name or name == "none":
            continue
        points = entry_points(group=group, name=name)
        if not points:
            logger.warning(
                "no OpenTelemetry exporter %r (%s): for otlp, pip install "
                "opentelemetry-exporter-otlp",
                name,
                group,
            )
            continue
        try:
            found.append(next(iter(points)).load()())
        except Exception as exc:  # a broken exporter must not stop the server
            logger.warning("the OpenTelemetry exporter %r failed to start: %s", name, exc)
    return found
