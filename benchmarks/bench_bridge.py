#!/usr/bin/env python
"""Stdio bridge latency: direct HTTP vs `mcp_notebook bridge` vs the mcp SDK's stdio server.

All three serve ``add(a: int, b: int) -> int``; the first two reach the same in-kernel server.
See README.md. Table on stdout, logs on stderr. ``--serve-sdk-stdio`` (internal) runs the SDK
server on this process's stdin/stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time

# bench_http.py sits next to this file (sys.path[0] when run as a script).
from bench_http import CALLS as HTTP_CALLS
from bench_http import PROTOCOL, check_add, connect, kernel_server, log

CALLS = {m: HTTP_CALLS[m] for m in ("ping", "tools/call")}
LABELS = {
    "http": "direct HTTP (in-kernel server)",
    "bridge": "mcp_notebook bridge (stdio -> HTTP)",
    "sdk-stdio": "mcp SDK stdio server",
}
TARGET_MS = 0.3  # what the bridge may add to a tools/call, p50


# --------------------------------------------------------------------------- lean stdio client
class StdioClient:
    """Newline-delimited JSON-RPC with a child process: one line out, lines in until the
    reply with our id (notifications and other messages are skipped). Raw fd reads behind
    select() keep every wait bounded and the client's CPU small."""

    def __init__(self, cmd: list[str], timeout: float = 15.0):
        self.timeout = timeout
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.out, self.inp = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        self.buffer = b""
        self.next_id = 0

    def _send(self, message: dict) -> None:
        data = json.dumps(message).encode() + b"\n"
        while data:
            data = data[os.write(self.out, data) :]

    def _line(self) -> bytes:
        while (end := self.buffer.find(b"\n")) < 0:
            ready, _, _ = select.select([self.inp], [], [], self.timeout)
            chunk = os.read(self.inp, 65536) if ready else b""
            if not chunk:
                why = "timed out" if not ready else f"closed its stdout (rc {self.proc.poll()})"
                raise RuntimeError(f"stdio server {why}")
            self.buffer += chunk
        line, self.buffer = self.buffer[:end], self.buffer[end + 1 :]
        return line

    def call(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        while True:
            line = self._line()
            if not line.strip():
                continue
            reply = json.loads(line)
            if "method" not in reply and reply.get("id") == self.next_id:
                break
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def initialize(self) -> StdioClient:
        info = {"name": "bench_bridge", "version": "0"}
        params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": info}
        self.call("initialize", params)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    def close(self) -> None:
        """EOF on stdin ends a well-behaved server; terminate, then kill, if it lingers."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        for stop in (None, self.proc.terminate, self.proc.kill):
            if stop is not None:
                stop()
            try:
                self.proc.wait(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue
        self.proc.stdout.close()


@contextlib.contextmanager
def stdio_client(cmd: list[str]):
    client = StdioClient(cmd)
    try:
        yield client.initialize()
    finally:
        client.close()


def serve_sdk_stdio() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench", log_level="WARNING")  # per-request INFO logs would be measured

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    server.run("stdio")


# --------------------------------------------------------------------------- measurement
def measure(clients: dict, n: int, warmup: int, rounds: int) -> dict:
    """Sequential requests; each round gives every path n/rounds requests per method, so
    drifting machine load hits all paths alike. Each round re-warms after switching."""
    samples = {name: {m: [] for m in CALLS} for name in clients}
    for r in range(rounds):
        for name, client in clients.items():
            for method, params in CALLS.items():
                for _ in range(max(20, warmup // rounds)):
                    client.call(method, params)
                for _ in range(max(1, n // rounds)):
                    t0 = time.perf_counter()
                    client.call(method, params)
                    samples[name][method].append((time.perf_counter() - t0) * 1e3)
        log(f"  round {r + 1}/{rounds} done")
    out = {}
    for name, per_method in samples.items():
        out[name] = {}
        for method, v in per_method.items():
            p50, p99 = statistics.median(v), statistics.quantiles(v, n=100)[98]
            out[name][method] = {"p50_ms": p50, "p99_ms": p99, "mean_ms": statistics.fmean(v)}
            log(f"  {name:<9} {method:<10} p50 {p50:.3f} ms, p99 {p99:.3f} ms")
    return out


def report(latency: dict) -> dict:
    rows = [["path", "ping p50", "p99", "call p50", "p99"]]
    for name, per_method in latency.items():
        cells = [f"{per_method[m][k]:.3f}" for m in CALLS for k in ("p50_ms", "p99_ms")]
        rows.append([LABELS[name], *cells])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print("latency: ms, sequential requests (call = tools/call add(2, 3))")
    for r in rows:
        cells = [c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)]
        print("  ".join([r[0].ljust(widths[0]), *cells]))

    def p50(name, method):
        return latency[name][method]["p50_ms"]

    added = {m: p50("bridge", m) - p50("http", m) for m in CALLS}
    met = added["tools/call"] <= TARGET_MS
    print(
        f"\nbridge adds {added['tools/call']:.3f} ms p50 over direct HTTP "
        f"(target ≤ {TARGET_MS} ms): {'MET' if met else 'NOT MET'}"
    )
    print(f"  (ping: bridge adds {added['ping']:.3f} ms p50)")
    vs_sdk = {m: p50("bridge", m) / p50("sdk-stdio", m) for m in CALLS}
    print(
        f"bridge / SDK stdio server, p50: tools/call {vs_sdk['tools/call']:.2f}x, "
        f"ping {vs_sdk['ping']:.2f}x (lower is better)"
    )
    return {"bridge_added_p50_ms": added, "target_met": met, "bridge_vs_sdk_stdio_p50": vs_sdk}


# --------------------------------------------------------------------------- main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000, help="timed requests per method, path")
    ap.add_argument("--warmup", type=int, default=200, help="untimed requests per method, path")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    ap.add_argument("--json", metavar="PATH", help="also write results as JSON")
    ap.add_argument("--serve-sdk-stdio", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_sdk_stdio:
        serve_sdk_stdio()
        return 0

    # The ExitStack closes clients, stops subprocesses and shuts the kernel down, whatever
    # happens (including Ctrl-C, and SIGTERM, turned into SystemExit).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with contextlib.ExitStack() as stack:
        log("in-kernel server: starting a kernel")
        url = stack.enter_context(kernel_server())  # %mcp start --port 0 --no-auth
        log(f"  endpoint {url}")
        http = connect(url)
        stack.callback(http.close)
        clients = {"http": http}
        bridge = [sys.executable, "-m", "mcp_notebook", "bridge", "--url", url]
        clients["bridge"] = stack.enter_context(stdio_client(bridge))
        sdk = [sys.executable, os.path.abspath(__file__), "--serve-sdk-stdio"]
        clients["sdk-stdio"] = stack.enter_context(stdio_client(sdk))
        for name, client in clients.items():
            check_add(client)  # every path must really add
            log(f"{LABELS[name]}: ready")
        log(f"latency: {args.requests} requests per method and path, {args.rounds} rounds")
        latency = measure(clients, args.requests, args.warmup, args.rounds)

    summary = report(latency)
    if args.json:
        params = {k: v for k, v in vars(args).items() if k not in ("json", "serve_sdk_stdio")}
        with open(args.json, "w") as fh:
            json.dump({"params": params, "url": url, "latency": latency, **summary}, fh, indent=2)
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
