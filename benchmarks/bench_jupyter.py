#!/usr/bin/env python
"""tools/call latency through Jupyter Server (the serverext relay) vs straight to the kernel.

One real ``jupyter server`` (token, base URL ``/base/``) starts one kernel (POST
api/kernels), which runs ``%mcp start``. Both paths reach that same in-kernel server:

* ``direct``: ``http://127.0.0.1:<kernel port>/mcp`` with the kernel's bearer token;
* ``jupyter``: ``http://127.0.0.1:<jupyter port>/base/mcp-notebook/bench/mcp`` with the
  Jupyter token (Jupyter authenticates, then the relay passes the request on over a
  kept-alive loopback connection to the kernel).

p50/p99 of ``ping`` and ``tools/call`` (``add(2, 3)``) over ``--requests`` sequential
requests on one keep-alive connection each, in ``--rounds`` rounds that alternate the
paths (drifting load hits both alike). Table on stdout, logs on stderr. See README.md.
"""

from __future__ import annotations

import argparse
import ast
import http.client
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx2

# bench_http.py sits next to this file (sys.path[0] when run as a script).
from bench_http import CALLS as HTTP_CALLS
from bench_http import Client, check_add, log
from jupyter_client import BlockingKernelClient
from jupyter_core.paths import jupyter_runtime_dir

CALLS = {m: HTTP_CALLS[m] for m in ("ping", "tools/call")}
KERNEL_CODE = """\
%load_ext mcp_notebook
@mcp.tool
def add(a: int, b: int) -> int:
    return a + b
%mcp start --port 0 --name bench
"""


def wait_for(condition, what: str, timeout: float = 60.0):
    end = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > end:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return value


def start_jupyter(token: str, root: str) -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--ServerApp.ip=127.0.0.1",
         "--ServerApp.port=0", "--ServerApp.open_browser=False", "--allow-root",
         f"--IdentityProvider.token={token}", "--ServerApp.base_url=/base/",
         f"--ServerApp.root_dir={root}", "--ServerApp.log_level=WARN"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sys.stderr,
    )  # fmt: skip
    info = Path(jupyter_runtime_dir()) / f"jpserver-{process.pid}.json"

    def port() -> int | None:
        if process.poll() is not None:
            raise RuntimeError("jupyter server exited")
        try:
            return json.loads(info.read_text())["port"]
        except (OSError, ValueError, KeyError):
            return None

    return process, wait_for(port, "the jupyter server")


def run_in_kernel(client: BlockingKernelClient, code: str, **kwargs) -> dict:
    reply = client.execute_interactive(code, timeout=120, output_hook=lambda m: None, **kwargs)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"kernel: {reply['content'].get('evalue')}")
    return reply["content"]


def authorized(url: str, authorization: str) -> Client:
    client = Client(url)
    client.headers["Authorization"] = authorization
    return client.initialize()


def measure(clients: dict[str, Client], n: int, warmup: int, rounds: int) -> dict:
    samples = {name: {m: [] for m in CALLS} for name in clients}
    for _ in range(rounds):
        for name, client in clients.items():
            for method, params in CALLS.items():
                for _ in range(max(20, warmup // rounds)):
                    client.call(method, params)
                for _ in range(max(1, n // rounds)):
                    start = time.perf_counter()
                    client.call(method, params)
                    samples[name][method].append((time.perf_counter() - start) * 1e3)
    return {
        name: {
            m: {"p50_ms": statistics.median(v), "p99_ms": statistics.quantiles(v, n=100)[98]}
            for m, v in per.items()
        }
        for name, per in samples.items()
    }


def jupyter_floor(base: str, token: str, n: int) -> dict:
    """Jupyter Server's own cost of an authenticated API request: GET api/status on one
    keep-alive connection (what any handler pays before the relay does anything)."""
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=15)
    connection.connect()
    connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    for index in range(n + 50):
        start = time.perf_counter()
        connection.request("GET", parts.path + "api/status", headers={"Authorization": token})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"api/status: HTTP {response.status}")
        if index >= 50:
            times.append((time.perf_counter() - start) * 1e3)
    connection.close()
    return {"p50_ms": statistics.median(times), "p99_ms": statistics.quantiles(times, n=100)[98]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    token, root = secrets.token_hex(16), tempfile.mkdtemp(prefix="bench-jupyter-")
    process, port = start_jupyter(token, root)
    base = f"http://127.0.0.1:{port}/base/"
    headers = {"Authorization": f"token {token}"}
    kernel_id = None
    try:
        reply = httpx2.post(base + "api/kernels", json={"name": "python3"}, headers=headers)
        kernel_id = reply.json()["id"]
        kernel = BlockingKernelClient(
            connection_file=str(Path(jupyter_runtime_dir()) / f"kernel-{kernel_id}.json")
        )
        kernel.load_connection_file()
        kernel.start_channels()
        kernel.wait_for_ready(timeout=120)
        content = run_in_kernel(
            kernel, KERNEL_CODE, user_expressions={"v": "repr((mcp.url, mcp.token))"}
        )
        shown = content["user_expressions"]["v"]["data"]["text/plain"]  # repr of a repr
        url, kernel_token = ast.literal_eval(ast.literal_eval(shown))
        log(f"kernel server {url}; through Jupyter {base}mcp-notebook/bench/mcp")
        clients = {
            "direct": authorized(url, f"Bearer {kernel_token}"),
            "jupyter": authorized(base + "mcp-notebook/bench/mcp", f"token {token}"),
        }
        for client in clients.values():
            check_add(client)
        results = measure(clients, args.requests, args.warmup, args.rounds)
        results["jupyter api/status"] = {"GET": jupyter_floor(base, f"token {token}", 500)}
        kernel.stop_channels()
    finally:
        if kernel_id:
            httpx2.delete(f"{base}api/kernels/{kernel_id}", headers=headers)
        process.terminate()
        process.wait(30)
    print(f"{'path':<10} {'method':<11} {'p50 ms':>8} {'p99 ms':>8}")
    for name, per in results.items():
        for method, figures in per.items():
            print(f"{name:<10} {method:<11} {figures['p50_ms']:8.3f} {figures['p99_ms']:8.3f}")
    call = {n: results[n]["tools/call"]["p50_ms"] for n in ("direct", "jupyter")}
    added = call["jupyter"] - call["direct"]
    ratio = call["jupyter"] / call["direct"]
    print(
        f"tools/call p50: through Jupyter Server {call['jupyter']:.3f} ms, direct "
        f"{call['direct']:.3f} ms: x{ratio:.2f}, +{added:.3f} ms"
    )
    if args.json:
        args.json.write_text(json.dumps({"results": results, "os": os.uname().sysname}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
