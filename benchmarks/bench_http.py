#!/usr/bin/env python
"""Loopback HTTP benchmark: mcp_notebook's in-kernel server and its export vs the mcp SDK
vs a tornado floor; and the export with OpenTelemetry tracing on.

All serve ``add(a: int, b: int) -> int`` over MCP Streamable HTTP on 127.0.0.1. See README.md.
Table on stdout, logs on stderr. ``--serve KIND`` (internal) runs one subprocess server.
``export-traced`` is ``export`` with tracing on (the SDK's TracerProvider with a
BatchSpanProcessor to an exporter that drops the spans, and a MeterProvider); its client
sends a ``traceparent`` header, as a client in a trace does. ``--baseline TREE`` (or
``--base``) adds ``ours-base``, ``export-base``, ...: the same servers with ``PYTHONPATH``
at another source tree, each right after its own in the same interleaved rounds.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import http.client
import json
import multiprocessing as mp
import os
import select
import socket
import statistics
import subprocess
import sys
import time
import uuid
from urllib.parse import urlsplit

PROTOCOL = "2025-11-25"
SERVERS = (
    "ours",
    "export",
    "export-inline",
    "export-asgi",
    "export-traced",
    "sdk",
    "sdk-json",
    "floor",
)
# Not in the default set: experiments. ours-asgi: what the in-kernel endpoint costs on
# uvicorn; ours-nohop: what the hop to the kernel's thread costs.
EXTRA = ("ours-asgi", "ours-nohop")
# With --baseline TREE: the same server run from another source tree (before a change).
BASE = "-base"
LABELS = {
    "ours": "mcp_notebook (in-kernel)",
    "export": "export (python -m PACKAGE --transport http: uvicorn, workers)",
    "export-inline": "export (uvicorn, inline)",
    "export-asgi": "export (uvicorn ASGI)",
    "export-traced": "export, tracing on",
    "sdk": "mcp SDK (default, SSE)",
    "sdk-json": "mcp SDK (json_response)",
    "floor": "tornado floor",
    "ours-asgi": "in-kernel Server, ASGI app under uvicorn on a kernel thread",
    "ours-nohop": "in-kernel, no hop (a measurement)",
}
LABELS |= {name + BASE: f"{LABELS[name]}, baseline tree" for name in SERVERS[:4]}
CALLS = {
    "ping": None,
    "tools/list": {},
    "tools/call": {"name": "add", "arguments": {"a": 2, "b": 3}},
}
KERNEL_CODE = """\
%load_ext mcp_notebook
@mcp.tool
def add(a: int, b: int) -> int:
    return a + b
%mcp start --port 0 --no-auth
"""
# ours-asgi: the kernel's own Server (tools on the kernel's thread, as for "ours") behind
# the ASGI app an export serves, under uvicorn (httptools and uvloop where installed) on a
# thread of the kernel. No early reply from the kernel thread: ASGI has none.
ASGI_CODE = """\
import asyncio as _asyncio, socket as _socket, threading as _threading, uvicorn as _uvicorn
from mcp_notebook.transports.asgi import McpAsgiApp as _McpAsgiApp
_sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, _socket.IPPROTO_TCP)
_sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
_sock.bind(("127.0.0.1", 0)); _sock.listen(128); _sock.setblocking(False)
_config = _uvicorn.Config(_McpAsgiApp(mcp._server, token=None), log_level="warning",
                          access_log=False, loop="none", timeout_keep_alive=600)
def _serve_asgi():
    try:
        import uvloop as _uvloop
        loop = _uvloop.new_event_loop()
    except ImportError:
        loop = _asyncio.new_event_loop()
    loop.run_until_complete(_uvicorn.Server(_config).serve(sockets=[_sock]))
_threading.Thread(target=_serve_asgi, name="bench-asgi", daemon=True).start()
asgi_url = f"http://127.0.0.1:{_sock.getsockname()[1]}/mcp"
"""
# ours-nohop: "ours" with each call's work started on the server's own loop instead of
# being handed to the kernel's (the early reply then leaves from the server's thread).
# DESIGN §3 forbids this (user code belongs on the kernel's thread); it is here only to
# measure what that hop costs, in the same run as everything else.
NOHOP_CODE = """\
from mcp_notebook.protocol import executor as _executor
_executor.LoopExecutor._hand_over = lambda self, handoff: handoff.start()
"""
# The code run in the kernel after KERNEL_CODE, and the expression giving the URL.
VARIANTS = {
    "ours": ("", "mcp.url"),
    "ours-asgi": (ASGI_CODE, "asgi_url"),
    "ours-nohop": (NOHOP_CODE, "mcp.url"),
}


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- lean client
class Client:
    """One keep-alive connection + one MCP session. http.client keeps client CPU small,
    which matters on a 2-core box where client and server share the CPUs."""

    def __init__(self, url: str, timeout: float = 15.0, headers: dict | None = None):
        parts = urlsplit(url)
        self.path = parts.path or "/"
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        self.conn.connect()
        # Small request/response pairs: avoid Nagle/delayed-ACK stalls.
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        }
        self.next_id = 0

    def _post(self, message: dict) -> http.client.HTTPResponse:
        self.conn.request("POST", self.path, json.dumps(message).encode(), self.headers)
        return self.conn.getresponse()

    def call(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        resp = self._post(message)
        body = resp.read()  # always drain, so the connection can be reused
        if resp.status != 200:
            raise RuntimeError(f"{method}: HTTP {resp.status}: {body[:200]!r}")
        if resp.getheader("Content-Type", "").startswith("text/event-stream"):
            reply = self._from_sse(body, self.next_id)
        else:
            reply = json.loads(body)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        self.last_response = resp
        return reply["result"]

    @staticmethod
    def _from_sse(body: bytes, want_id: int) -> dict:
        # The SDK's default mode answers a POST with an SSE stream; find our response event.
        for event in body.decode().replace("\r\n", "\n").split("\n\n"):
            data = "\n".join(ln[5:].lstrip() for ln in event.split("\n") if ln.startswith("data:"))
            if data:
                msg = json.loads(data)
                if isinstance(msg, dict) and msg.get("id") == want_id:
                    return msg
        raise RuntimeError(f"no response with id {want_id} in SSE body: {body[:200]!r}")

    def notify(self, method: str) -> None:
        resp = self._post({"jsonrpc": "2.0", "method": method})
        resp.read()
        if resp.status != 202:
            raise RuntimeError(f"{method}: expected 202, got {resp.status}")

    def initialize(self) -> Client:
        info = {"name": "bench_http", "version": "0"}
        params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": info}
        self.call("initialize", params)
        session = self.last_response.getheader("Mcp-Session-Id")
        if session:
            self.headers["Mcp-Session-Id"] = session
        self.headers["MCP-Protocol-Version"] = PROTOCOL
        self.notify("notifications/initialized")
        return self

    def close(self) -> None:
        self.conn.close()


# What a client in a trace sends (W3C trace context): to the traced server only.
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TRACED_URLS: set[str] = set()


def connect(url: str, deadline_s: float = 30.0) -> Client:
    """Initialize a session, retrying briefly while a freshly started server comes up."""
    end = time.monotonic() + deadline_s
    headers = {"traceparent": TRACEPARENT} if url in TRACED_URLS else None
    while True:
        try:
            return Client(url, headers=headers).initialize()
        except (ConnectionError, OSError):
            if time.monotonic() > end:
                raise
            time.sleep(0.1)


# --------------------------------------------------------------------------- measurements
def check_add(client: Client) -> None:
    result = client.call("tools/call", CALLS["tools/call"])
    if result.get("content", [{}])[0].get("text") != "5":  # every server must really add
        raise RuntimeError(f"add(2, 3) returned {result!r}")


def measure_latency(urls: dict, n: int, warmup: int, rounds: int) -> tuple[dict, dict]:
    """Sequential latency, interleaved: each round gives every server n/rounds requests per
    method, so drifting machine load (other jobs on a small VM) hits all servers alike."""
    clients, samples, errors = {}, {}, {}
    try:
        for name, url in urls.items():
            try:
                clients[name] = connect(url)
                check_add(clients[name])
                samples[name] = {m: [] for m in CALLS}
            except Exception as exc:
                errors[name] = repr(exc)
        for _ in range(rounds):
            for name in list(samples):
                client = clients[name]
                try:
                    for method, params in CALLS.items():
                        for _ in range(max(20, warmup // rounds)):  # (re-)warm after switching
                            client.call(method, params)
                        for _ in range(max(1, n // rounds)):
                            t0 = time.perf_counter()
                            client.call(method, params)
                            samples[name][method].append((time.perf_counter() - t0) * 1e3)
                except Exception as exc:
                    errors[name] = repr(exc)
                    del samples[name]
    finally:
        for client in clients.values():
            client.close()
    out = {}
    for name, per_method in samples.items():
        out[name] = {}
        for method, v in per_method.items():
            p50, p99 = statistics.median(v), statistics.quantiles(v, n=100)[98]
            out[name][method] = {"p50_ms": p50, "p99_ms": p99, "mean_ms": statistics.fmean(v)}
            log(f"  {name:<8} {method:<10} p50 {p50:.3f} ms, p99 {p99:.3f} ms")
    return out, errors


def _throughput_worker(url, duration, warmup, barrier, queue, traced) -> None:
    if traced:  # a spawned process: the parent's set is not here
        TRACED_URLS.add(url)
    try:
        client = connect(url)
        params = CALLS["tools/call"]
        for _ in range(warmup):
            client.call("tools/call", params)
        barrier.wait(timeout=120)  # all clients start hammering at the same moment
        count, t0 = 0, time.perf_counter()
        end = t0 + duration
        while time.perf_counter() < end:
            client.call("tools/call", params)
            count += 1
        queue.put((count, time.perf_counter() - t0))
        client.close()
    except Exception as exc:
        barrier.abort()
        queue.put(("error", repr(exc)))


def measure_throughput(url: str, clients: int, duration: float, warmup: int) -> float:
    # spawn, not fork: the parent may hold zmq sockets/threads of the kernel client.
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(clients), ctx.Queue()
    args = (url, duration, warmup, barrier, queue, url in TRACED_URLS)
    procs = [ctx.Process(target=_throughput_worker, args=args, daemon=True) for _ in range(clients)]
    try:
        for p in procs:
            p.start()
        results = [queue.get(timeout=duration + 180) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
    if errors := [r[1] for r in results if r[0] == "error"]:
        raise RuntimeError(f"throughput client failed: {errors[0]}")
    rps = sum(count / elapsed for count, elapsed in results)
    log(f"  throughput {rps:.0f} req/s with {clients} clients")
    return rps


# --------------------------------------------------------------------------- servers
def tree_env(tree: str | None) -> dict[str, str] | None:
    """The environment of a server run from source tree ``tree`` (None: this one's)."""
    if tree is None:
        return None
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.path.abspath(tree) + (os.pathsep + path if path else "")}


@contextlib.contextmanager
def subprocess_server(kind: str, tree: str | None = None):
    """Run this script with --serve KIND; the child binds port 0 and prints the port."""
    cmd = [sys.executable, __file__, "--serve", kind]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=tree_env(tree))
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else ""
        if not line.startswith("PORT "):
            raise RuntimeError(f"server {kind} did not start (got {line!r})")
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def kernel_server(tree: str | None = None, variant: str = "ours"):
    """Start a real ipykernel, load mcp_notebook in it and read back the endpoint URL."""
    with kernel_session(tree, variant) as (url, _client):
        yield url


@contextlib.contextmanager
def kernel_session(tree: str | None = None, variant: str = "ours"):
    """``kernel_server``'s endpoint URL, and the kernel's client (bench_panel.py opens a
    comm with it, as a front end would). ``tree``: import mcp_notebook from there;
    ``variant``: a key of VARIANTS (what else runs in the kernel, which URL is served)."""
    from jupyter_client.manager import start_new_kernel

    def hook(msg):  # keep kernel output off our stdout
        if msg["msg_type"] in ("stream", "error"):
            c = msg["content"]
            log(f"  kernel: {c.get('text', '').rstrip() or c.get('evalue')}")

    env = tree_env(tree)
    kwargs = {} if env is None else {"env": env}
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=120, **kwargs)
    try:
        log(f"  kernel pid {km.provisioner.process.pid}")
        more, url = VARIANTS[variant]
        code = KERNEL_CODE + more
        reply = kc.execute_interactive(
            code, user_expressions={"url": url}, timeout=120, output_hook=hook
        )
        content = reply["content"]
        expr = content.get("user_expressions", {}).get("url", {})
        for what, c in (("kernel setup", content), ("mcp.url", expr)):
            if c.get("status") != "ok":
                raise RuntimeError(f"{what} failed: {c.get('ename')}: {c.get('evalue')}")
        yield str(ast.literal_eval(expr["data"]["text/plain"])), kc
    finally:
        with contextlib.suppress(Exception):
            kc.stop_channels()
        km.shutdown_kernel(now=True)


# uvicorn closes a keep-alive connection idle for 5 s: with many servers, a round of the
# others lasts longer than that, and the next request would meet a closed connection.
KEEP_ALIVE = {"timeout_keep_alive": 600}


def _listen() -> socket.socket:
    # proto must be IPPROTO_TCP (not 0): asyncio only sets TCP_NODELAY on accepted sockets
    # whose proto says TCP; otherwise Nagle + delayed ACK add ~40 ms per response.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def serve_sdk(json_response: bool) -> None:
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    # WARNING level: per-request INFO logging would be measured otherwise.
    server = MCPServer("bench", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    # host=127.0.0.1 makes the SDK enable DNS-rebinding protection that allows
    # Host 127.0.0.1:* and no/loopback Origin -- exactly what our client sends.
    app = server.streamable_http_app(json_response=json_response, host="127.0.0.1")
    sock = _listen()
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, **KEEP_ALIVE)
    uvicorn.Server(config).run(sockets=[sock])


def serve_export(kind: str) -> None:
    """What an exported notebook runs (mcp_notebook.export.runtime), no kernel: its ASGI
    app under uvicorn, as ``python -m PACKAGE --transport http`` serves it, with tools on
    worker threads ("export", "export-asgi") or on the serving loop ("export-inline")."""
    import uvicorn

    from mcp_notebook.export.runtime import asgi_app, exported_app

    app = exported_app("bench", {})

    @app.tool
    def add(a: int, b: int) -> int:
        return a + b

    if kind == "export-traced":
        app.tracing(**production_tracing())
    sock = _listen()
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    served = asgi_app(app, inline=kind == "export-inline", environ={"MCP_NOTEBOOK_NO_AUTH": "1"})
    config = uvicorn.Config(served, log_level="warning", access_log=False, **KEEP_ALIVE)
    uvicorn.Server(config).run(sockets=[sock])


def production_tracing() -> dict:
    """Tracer and meter providers as in production, with export off the request's path:
    a batch processor to an exporter that drops the spans, a reader nobody collects."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Dropped(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    tracer = TracerProvider()
    tracer.add_span_processor(BatchSpanProcessor(Dropped()))
    meter = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return {"tracer_provider": tracer, "meter_provider": meter}


def serve_floor() -> None:
    """The practical floor: tornado, hand-written JSON-RPC, no validation frameworks."""
    import asyncio

    import tornado.httpserver
    import tornado.web

    sessions: set[str] = set()
    props = {"a": {"type": "integer"}, "b": {"type": "integer"}}
    tool = {"name": "add", "inputSchema": {"type": "object", "properties": props}}

    class Handler(tornado.web.RequestHandler):
        def post(self):
            msg = json.loads(self.request.body)
            method = msg.get("method")
            if method == "initialize":
                session = uuid.uuid4().hex
                sessions.add(session)
                self.set_header("Mcp-Session-Id", session)
                info = {"name": "floor", "version": "0"}
                result = {"protocolVersion": PROTOCOL, "capabilities": {"tools": {}}}
                result["serverInfo"] = info
            elif self.request.headers.get("Mcp-Session-Id") not in sessions:
                self.set_status(404)
                return
            elif "id" not in msg:  # notification
                self.set_status(202)
                return
            elif method == "ping":
                result = {}
            elif method == "tools/list":
                result = {"tools": [tool]}
            elif method == "tools/call":
                args = msg["params"]["arguments"]
                value = int(args["a"]) + int(args["b"])
                text = [{"type": "text", "text": str(value)}]
                result = {"content": text, "structuredContent": {"result": value}}
            else:
                raise tornado.web.HTTPError(400)  # not needed by this benchmark
            self.write({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    async def main():
        sock = _listen()
        server = tornado.httpserver.HTTPServer(tornado.web.Application([(r"/mcp", Handler)]))
        server.add_sockets([sock])
        print(f"PORT {sock.getsockname()[1]}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


# --------------------------------------------------------------------------- report
def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def report(results: dict, clients: int) -> dict:
    def fmt(v, spec=".3f"):
        return "-" if v is None else format(v, spec)

    def get(name, method, key):
        return results.get(name, {}).get("latency", {}).get(method, {}).get(key)

    head = ["server", "ping p50", "p99", "list p50", "p99", "call p50", "p99", f"rps x{clients}"]
    rows = [head]
    for name, res in results.items():
        row = [LABELS[name]]
        for method in CALLS:
            row += [fmt(get(name, method, "p50_ms")), fmt(get(name, method, "p99_ms"))]
        rows.append([*row, fmt(res.get("throughput_rps"), ".0f")])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    print(f"latency: ms, sequential, one keep-alive connection; rps: tools/call, {clients} clients")
    for r in rows:
        cells = [r[0].ljust(widths[0])]
        cells += [c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)]
        print("  ".join(cells))

    ratios = {}

    def compare(mine: str, other: str) -> dict:
        r = {m: ratio(get(mine, m, "p50_ms"), get(other, m, "p50_ms")) for m in CALLS}
        r["throughput"] = ratio(*(results[n].get("throughput_rps") for n in (mine, other)))
        cells = "  ".join(f"{k} {fmt(v, '.2f')}x" for k, v in r.items())
        print(f"  {mine} vs {LABELS[other]:<26} {cells}")
        return r

    print("\nratios ours/other (p50: lower is better; rps: higher is better)")
    if "latency" not in results.get("ours", {}):
        print("  (no results for ours)")
    for other in [name for name in LABELS if name != "ours" and not name.endswith(BASE)]:
        if other in results and "ours" in results:
            ratios[other] = compare("ours", other)
    for base in [name for name in results if name.endswith(BASE)]:  # this tree / baseline
        if base[: -len(BASE)] in results:
            ratios[base] = compare(base[: -len(BASE)], base)
    for other in ("sdk", "floor"):  # the baseline's own ratios, for before/after tables
        if "ours" + BASE in results and other in results:
            ratios[f"ours{BASE} vs {other}"] = compare("ours" + BASE, other)
    for extra in EXTRA:  # an experiment against the floor: what it would save
        if "latency" in results.get(extra, {}) and "floor" in results:
            ratios[f"{extra} vs floor"] = compare(extra, "floor")

    ratios["tracing"] = tracing_report(get)
    sdk, floor = ratios.get("sdk", {}), ratios.get("floor", {})
    checks = [  # targets stated by the project
        ("tools/call p50 <= 0.45x SDK default", sdk.get("tools/call"), 0.45, "le"),
        ("tools/call p50 <= 1.2x floor", floor.get("tools/call"), 1.2, "le"),
        (f"{clients}-client rps >= 2x SDK default", sdk.get("throughput"), 2.0, "ge"),
    ]
    targets = {}
    print("\ntargets")
    for text, value, limit, op in checks:
        met = None if value is None else (value <= limit if op == "le" else value >= limit)
        targets[text] = {"ratio": value, "met": met}
        verdict = {None: "n/a", True: "MET", False: "NOT MET"}[met]
        shown = "-" if value is None else f"{value:.2f}x"
        print(f"  {text:<36} {shown:>7}  {verdict}")
    return {"ratios": ratios, "targets": targets}


def tracing_report(get) -> dict:
    """tools/call p50 of the export with tracing off and on (and of the --base checkout's),
    each against the tornado floor of the same run, and against each other."""
    p50 = {name: get(name, "tools/call", "p50_ms") for name in SERVERS}
    pairs = {
        "off / floor": ("export", "floor"),
        "on / floor": ("export-traced", "floor"),
        "on / off": ("export-traced", "export"),
        "base / floor": ("export-base", "floor"),
        "off / base": ("export", "export-base"),
    }
    found = {k: ratio(p50[a], p50[b]) for k, (a, b) in pairs.items()}
    found = {k: v for k, v in found.items() if v is not None}
    if found:
        print("\ntracing: tools/call p50 ratios (export: uvicorn, workers)")
        for text, value in found.items():
            print(f"  {text:<14} {value:.2f}x")
    return found


# --------------------------------------------------------------------------- main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000, help="timed requests per method")
    ap.add_argument("--warmup", type=int, default=200, help="untimed requests per method")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved latency rounds")
    ap.add_argument("--clients", type=int, default=8, help="concurrent client processes")
    ap.add_argument("--duration", type=float, default=5.0, help="throughput run length, seconds")
    known = ",".join(SERVERS + EXTRA)
    ap.add_argument("--servers", default=",".join(SERVERS), help=f"any of {known}")
    ap.add_argument("--json", metavar="PATH", help="also write results as JSON")
    ap.add_argument(
        "--baseline",
        "--base",
        metavar="TREE",
        help="also run ours and export from source tree TREE (e.g. a git worktree of main), "
        "interleaved with this tree's in the same rounds",
    )
    ap.add_argument("--serve", choices=SERVERS[1:], help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.serve == "floor":
        serve_floor()
        return 0
    if args.serve and args.serve.startswith("export"):
        serve_export(args.serve)
        return 0
    if args.serve:
        serve_sdk(json_response=args.serve == "sdk-json")
        return 0

    names = [s for s in args.servers.split(",") if s]
    if unknown := set(names) - set(SERVERS + EXTRA):
        ap.error(f"unknown servers: {sorted(unknown)}")
    if args.baseline:  # each baseline server right after its own: same rounds, same load
        names = [n for name in names for n in (name, name + BASE) if n in LABELS]
    results: dict = {name: {} for name in names}
    load_start = os.getloadavg()
    # All servers stay up for the whole run (idle ones cost ~nothing) so latency rounds can
    # be interleaved; the ExitStack stops every one of them, whatever happens.
    with contextlib.ExitStack() as stack:
        urls = {}
        for name in names:
            log(f"{LABELS[name]}: starting")
            try:
                kind, tree = name.removesuffix(BASE), None
                if name.endswith(BASE):
                    tree = args.baseline
                if kind.startswith("ours"):
                    server = kernel_server(tree, variant=kind)
                else:
                    server = subprocess_server(kind, tree)
                urls[name] = results[name]["url"] = stack.enter_context(server)
                if name == "export-traced":
                    TRACED_URLS.add(urls[name])
                log(f"  endpoint {urls[name]}")
            except Exception as exc:
                results[name]["error"] = repr(exc)
        log(f"latency: {args.requests} requests per method, {args.rounds} interleaved rounds")
        latency, errors = measure_latency(urls, args.requests, args.warmup, args.rounds)
        for name, url in urls.items():
            if name in errors:
                results[name]["error"] = errors[name]
                continue
            results[name]["latency"] = latency[name]
            try:
                log(f"{LABELS[name]}: throughput")
                rps = measure_throughput(url, args.clients, args.duration, args.warmup // 4)
                results[name]["throughput_rps"] = rps
            except Exception as exc:
                results[name]["error"] = repr(exc)
    failed = [name for name, res in results.items() if "error" in res]
    for name in failed:
        log(f"{LABELS[name]}: FAILED: {results[name]['error']}")

    load = f"{load_start[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end"
    print(f"load average (1 min): {load}")
    summary = report(results, args.clients)
    if args.json:
        params = {k: v for k, v in vars(args).items() if k not in ("json", "serve")}
        params["load_average"] = [load_start[0], os.getloadavg()[0]]
        with open(args.json, "w") as fh:
            json.dump({"params": params, "servers": results, **summary}, fh, indent=2)
        log(f"wrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
