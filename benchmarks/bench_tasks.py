#!/usr/bin/env python
"""Tasks: what polling costs, and what kept tasks weigh. See README.md.

* latency: p50/p99 of ``tasks/get`` (a completed task, its result inlined) against
  ``tools/list`` (3 tools), 2026-07-28 over loopback HTTP to ``mcp-notebook serve`` of a
  small notebook, on one keep-alive connection; and the same two in process
  (``await server.handle(...)``, no transport). Rounds alternate the methods.
* memory: bytes per 1,000 completed tasks kept in a ``TaskStore`` (tracemalloc), each with
  a small tool result, and what the store's own estimate says.

Table on stdout, progress on stderr; ``--json PATH`` writes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from urllib.parse import urlsplit

EXT = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}
NOTEBOOK_CELLS = [
    "%load_ext mcp_notebook",
    "@mcp.tool(task='required')\ndef job(n: int) -> str:\n    return 'x' * n",
    "@mcp.tool\ndef add(a: int, b: int) -> int:\n    return a + b",
    "@mcp.tool\ndef greet(name: str) -> str:\n    return f'Hello, {name}!'",
]
TARGET = 1.2  # tasks/get p50 within 1.2 x tools/list p50


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def message(method: str, params: dict, request_id: int) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**params, "_meta": META},
    }


class Client:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.path = parts.path
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        self.ids = 0

    def request(self, method: str, params: dict) -> dict:
        self.ids += 1
        body = message(method, params, self.ids)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": method,
        }
        name = params.get("taskId", params.get("name"))
        if name is not None:
            headers["Mcp-Name"] = name
        self.conn.request("POST", self.path, json.dumps(body), headers)
        response = self.conn.getresponse()
        text = response.read().decode()
        if response.headers.get("Content-Type", "").startswith("text/event-stream"):
            text = next(
                line[5:] for line in reversed(text.splitlines()) if line.startswith("data:")
            )
        reply = json.loads(text)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.99) - 1]


def timed(call, requests: int, rounds: int, warmup: int) -> dict[str, list[float]]:
    """``call(method)`` for both methods, alternating per round; seconds per request."""
    samples: dict[str, list[float]] = {"tasks/get": [], "tools/list": []}
    per_round = max(requests // rounds, 1)
    for _ in range(rounds):
        for method in samples:
            for _ in range(warmup):
                call(method)
            for _ in range(per_round):
                start = time.perf_counter()
                call(method)
                samples[method].append(time.perf_counter() - start)
    return samples


def http_latency(requests: int, rounds: int, warmup: int) -> dict[str, list[float]]:
    import nbformat

    folder = Path(tempfile.mkdtemp(prefix="bench-tasks-"))
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(c) for c in NOTEBOOK_CELLS]
    path = folder / "bench.ipynb"
    nbformat.write(notebook, path)
    command = [sys.executable, "-m", "mcp_notebook", "serve", str(path), "--port", "0"]
    serve = subprocess.Popen(
        [*command, "--no-auth"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    try:
        url = None
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline:
            line = serve.stderr.readline()
            if not line:
                raise RuntimeError("mcp-notebook serve ended before it served")
            found = re.search(r"at (http://\S+/mcp)", line)
            url = found.group(1) if found else None
        if url is None:
            raise RuntimeError("mcp-notebook serve did not say where it serves")
        log(f"serving at {url}")
        client = Client(url)
        created = client.request("tools/call", {"name": "job", "arguments": {"n": 200}})
        task_id = created["taskId"]
        while client.request("tasks/get", {"taskId": task_id})["status"] != "completed":
            time.sleep(0.01)
        params = {"tasks/get": {"taskId": task_id}, "tools/list": {}}
        return timed(lambda m: client.request(m, params[m]), requests, rounds, warmup)
    finally:
        serve.terminate()
        serve.wait(30)


def in_process_latency(requests: int, rounds: int, warmup: int) -> dict[str, list[float]]:
    from mcp_notebook import NotebookMCP
    from mcp_notebook.protocol import Server, modern

    app = NotebookMCP()

    @app.tool(task="required")
    def job(n: int) -> str:
        return "x" * n

    @app.tool
    def add(a: int, b: int) -> int:
        return a + b

    @app.tool
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    server = Server(app.registry, tasks=app.tasks)
    loop = asyncio.new_event_loop()

    def handle(method: str, params: dict) -> dict:
        request = message(method, params, 1)
        reply = loop.run_until_complete(server.handle(request, modern.open_request(request)))
        return reply["result"]

    created = handle("tools/call", {"name": "job", "arguments": {"n": 200}})
    params = {"tasks/get": {"taskId": created["taskId"]}, "tools/list": {}}
    assert handle("tasks/get", params["tasks/get"])["status"] == "completed"
    try:
        return timed(lambda m: handle(m, params[m]), requests, rounds, warmup)
    finally:
        loop.close()


def memory_per_thousand(count: int = 1000) -> dict[str, float]:
    from mcp_notebook.protocol.tasks import TaskStore

    store = TaskStore(max_tasks=count)
    result = {"content": [{"type": "text", "text": "a small result of about 40 characters"}]}
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(count):
        task = store.create(f"tools/call job{i}", "bench-client")
        store.complete(task, json.loads(json.dumps(result)))  # each its own result, as sent
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(store) == count
    return {"traced_bytes": (after - before) * 1000 / count, "estimated_bytes": store.bytes}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--no-http", action="store_true", help="in process only (no kernel)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    figures: dict[str, object] = {}
    runs = [("in process", in_process_latency)]
    if not args.no_http:
        runs.insert(0, ("HTTP (serve)", http_latency))
    print(f"{'where':<14} {'method':<11} {'p50 ms':>8} {'p99 ms':>8}")
    ok = True
    for where, run in runs:
        log(f"latency: {where}")
        samples = run(args.requests, args.rounds, args.warmup)
        p50 = {}
        for method, values in samples.items():
            p50[method], p99 = percentiles(values)
            print(f"{where:<14} {method:<11} {p50[method] * 1e3:8.3f} {p99 * 1e3:8.3f}")
        ratio = p50["tasks/get"] / p50["tools/list"]
        met = ratio <= TARGET
        ok = ok and met
        print(
            f"{where:<14} tasks/get p50 / tools/list p50 = {ratio:.2f}"
            f" (target <= {TARGET}: {'MET' if met else 'NOT MET'})"
        )
        figures[where] = {"p50_ms": {m: v * 1e3 for m, v in p50.items()}, "ratio": ratio}
    memory = memory_per_thousand()
    print(
        f"memory per 1,000 kept completed tasks: {memory['traced_bytes'] / 1024:.0f} KiB traced"
        f" ({memory['estimated_bytes'] / 1024:.0f} KiB by the store's own estimate)"
    )
    figures["memory_per_1000"] = memory
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
