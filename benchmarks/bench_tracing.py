"""``tools/call`` in-process (``await server.handle(...)``) with tracing off and on.

No sockets, no kernel: what tracing adds to the protocol core's path, and that with it off
the path is what it was. Tracing on means the SDK's ``TracerProvider`` with a
``BatchSpanProcessor`` (to an exporter that drops the spans: export is off the request's
path) and a ``MeterProvider`` (the duration histogram), as a production setup has them.
Rounds alternate between the two servers so that drifting load hits both alike.

    python benchmarks/bench_tracing.py [--calls 20000] [--rounds 10] [--json PATH]

Run with ``PYTHONPATH`` at another checkout (one without tracing) for its "off" row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import InlineExecutor, Server, Session

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"},
}


def servers() -> dict[str, Server]:
    mcp = NotebookMCP()

    @mcp.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    made = {"off": Server(mcp.registry, executor=InlineExecutor())}
    try:
        from mcp_notebook.protocol.telemetry import TracingSettings, apply
    except ImportError:
        return made  # a checkout without tracing: its "off" row only
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Dropped(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Dropped()))
    meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
    made["on"] = Server(mcp.registry, executor=InlineExecutor())
    apply(TracingSettings(True, provider, meters), made["on"])
    return made


async def timed(server: Server, session: Session, calls: int) -> list[float]:
    params = {"name": "add", "arguments": {"a": 2, "b": 3}}
    took = []
    for n in range(calls):
        message = {**CALL, "id": n, "params": params}
        start = time.perf_counter()
        reply = await server.handle(message, session)
        took.append(time.perf_counter() - start)
        assert reply is not None and "result" in reply, reply
    return took


async def main(calls: int, rounds: int) -> dict[str, dict[str, float]]:
    made = servers()
    sessions = {name: Session() for name in made}
    for name, server in made.items():
        await server.handle(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}, sessions[name]
        )
        await timed(server, sessions[name], 500)  # warm-up
    samples: dict[str, list[float]] = {name: [] for name in made}
    for _ in range(rounds):
        for name, server in made.items():
            samples[name] += await timed(server, sessions[name], calls // rounds)
    return {
        name: {
            "p50_us": statistics.median(s) * 1e6,
            "p99_us": statistics.quantiles(s, n=100)[98] * 1e6,
            "calls": len(s),
        }
        for name, s in samples.items()
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    figures = asyncio.run(main(args.calls, args.rounds))
    print(f"{'tracing':8} {'p50 µs':>8} {'p99 µs':>8} {'calls':>7}")
    for name, row in figures.items():
        print(f"{name:8} {row['p50_us']:8.1f} {row['p99_us']:8.1f} {row['calls']:7d}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)
    sys.exit(0)
