#!/usr/bin/env python
"""Throughput of an export on Ray Serve: 1 replica vs 4, a tool that waits 50 ms (I/O bound).

Exports a two-cell notebook, starts a local Ray cluster (in a subprocess) serving
``PACKAGE.ray:app`` with N replicas on a loopback port, and has ``--clients`` threads make
2026-07-28 ``tools/call`` requests (stateless: any replica may answer) for ``--seconds``.
Each replica runs tools on its 8 worker threads, so one replica answers at most 8 waits at
once. Needs ``pip install 'mcp-notebook[ray]'``. Table on stdout, logs on stderr.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from mcp_notebook.export.package import export_notebook

NOTEBOOK = """# %%
import os
import time

# %%
@mcp.tool
def wait(ms: int = 50) -> int:
    time.sleep(ms / 1000)
    return os.getpid()
"""
CLUSTER = """
import sys
import ray
from ray import serve
from mcp_notebook.export.ray_serve import build

port, replicas, ongoing = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ray.init(num_cpus=8, include_dashboard=False, log_to_driver=False)
serve.start(http_options={"host": "127.0.0.1", "port": port})
options = {"ray_actor_options": {"num_cpus": 0.5}, "max_ongoing_requests": ongoing}
serve.run(build("bench_mcp.notebook", replicas, **options), route_prefix="/mcp")
print("ready", flush=True)
sys.stdin.read()
serve.shutdown()
ray.shutdown()
"""
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "wait",
}


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def cluster(package_dir: Path, replicas: int, ongoing: int) -> tuple[subprocess.Popen[str], int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": str(package_dir),
        "MCP_NOTEBOOK_NO_AUTH": "1",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    process = subprocess.Popen(
        [sys.executable, "-c", CLUSTER, str(port), str(replicas), str(ongoing)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    if process.stdout.readline().strip() != "ready":
        raise SystemExit(f"the Ray cluster did not start (exit {process.wait()})")
    return process, port


def load(port: int, clients: int, seconds: float) -> tuple[int, set[str], int]:
    """Calls completed, the replicas (pids) seen, and failures, in ``seconds``."""
    done, pids, failed = [0], set(), [0]
    lock = threading.Lock()
    end = time.monotonic() + seconds
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "wait", "arguments": {"ms": 50}, "_meta": META},
        }
    )

    def worker() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while time.monotonic() < end:
            conn.request("POST", "/mcp", body, HEADERS)
            response = conn.getresponse()
            text = response.read().decode()
            with lock:
                if response.status != 200:
                    failed[0] += 1
                    continue
                done[0] += 1
                pids.add(json.loads(text)["result"]["content"][0]["text"])

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done[0], pids, failed[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--ongoing",
        type=int,
        default=100,
        help="requests a replica takes at once (ray_serve's default 100; 2 models a tool "
        "bound to a small pool, such as two database connections)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        notebook = Path(tmp) / "bench.py"
        notebook.write_text(NOTEBOOK)
        export_notebook(notebook, Path(tmp) / "out")
        rows = []
        for replicas in args.replicas:
            log(f"starting {replicas} replica(s)")
            process, port = cluster(Path(tmp) / "out", replicas, args.ongoing)
            try:
                load(port, args.clients, 2.0)  # warm up: connections, workers
                done, pids, failed = load(port, args.clients, args.seconds)
            finally:
                assert process.stdin is not None
                process.stdin.close()
                process.wait(120)
            rows.append((replicas, done / args.seconds, len(pids), failed))
    base = rows[0][1]
    print(f"{args.clients} clients, {args.ongoing} requests at once per replica, 50 ms tool")
    print(f"{'replicas':>8} {'calls/s':>9} {'vs first':>9} {'replicas seen':>14} {'failed':>7}")
    for replicas, rate, seen, failed in rows:
        print(f"{replicas:>8} {rate:>9.1f} {rate / base:>8.2f}x {seen:>14} {failed:>7}")


if __name__ == "__main__":
    main()
