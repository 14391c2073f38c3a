#!/usr/bin/env python
"""Start-up: spawn -> `initialize` reply and spawn -> first `tools/list` reply, stdio.

`mcp-notebook serve --transport stdio NOTEBOOK` against the official SDK's stdio server
(`MCPServer` with one tool). See README.md. Table on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "notebooks" / "quickstart.ipynb"
PROTOCOL = "2025-11-25"
TIMEOUT = 120.0  # seconds for any one reply
LIST_SLACK = 0.5  # seconds the first tools/list may take beyond the SDK's plus the notebook's

# The SDK's stdio server, as small as it gets: its start-up is what we compare with.
SDK_SERVER = """\
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    return a + b


server.run("stdio")
"""


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- one start
def time_start(command: list[str]) -> tuple[float, float]:
    """Spawn ``command`` and talk as a client does: ``initialize`` at once, then
    ``notifications/initialized`` and ``tools/list``. Seconds from the spawn to each reply."""
    info = {"name": "bench_start", "version": "0"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": info},
    }
    listing = [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    began = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        bufsize=0,
    )
    lines = Lines(process)
    try:
        write(process, [initialize])
        reply = lines.reply(1)
        initialized = time.perf_counter() - began
        write(process, listing)
        tools = lines.reply(2)
        listed = time.perf_counter() - began
        if "result" not in reply or not tools.get("result", {}).get("tools"):
            raise RuntimeError(f"unexpected replies: {reply} {tools}")
        return initialized, listed
    finally:
        stop(process)


def write(process: subprocess.Popen, messages: list[dict]) -> None:
    data = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
    while data:
        data = data[os.write(process.stdin.fileno(), data) :]


class Lines:
    """A child's stdout, line by line, every wait bounded."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process, self.pending = process, b""

    def reply(self, request_id: int) -> dict:
        """Lines until the reply to ``request_id`` (notifications are skipped)."""
        fd, deadline = self.process.stdout.fileno(), time.monotonic() + TIMEOUT
        while True:
            while (end := self.pending.find(b"\n")) >= 0:
                line, self.pending = self.pending[:end], self.pending[end + 1 :]
                message = json.loads(line) if line.strip() else {}
                if "method" not in message and message.get("id") == request_id:
                    return message
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:
                status = self.process.poll()
                raise RuntimeError(f"no reply to {request_id} (exit status {status})")
            self.pending += chunk


def stop(process: subprocess.Popen) -> None:
    """EOF on stdin ends a well-behaved server; terminate, then kill, if it lingers."""
    with contextlib.suppress(OSError):
        process.stdin.close()
    for ask in (None, process.terminate, process.kill):
        if ask is not None:
            ask()
        try:
            process.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


# --------------------------------------------------------------------------- the notebook
def notebook_time(path: Path) -> float:
    """Seconds the notebook's own code cells take in a fresh kernel that is already up
    (serve's floor: it must run them before it can list their tools)."""
    from jupyter_client.manager import KernelManager

    document = json.loads(path.read_text(encoding="utf-8"))
    cells = [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in document["cells"]
        if c["cell_type"] == "code"
    ]
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(path.parent), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = manager.client()
    try:
        client.start_channels()
        client.wait_for_ready(timeout=60)
        began = time.perf_counter()
        for source in cells:
            reply = client.execute_interactive(source, output_hook=lambda message: None)
            if reply["content"]["status"] != "ok":
                raise RuntimeError(f"a cell failed: {reply['content'].get('evalue')}")
        return time.perf_counter() - began
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


# --------------------------------------------------------------------------- main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="starts of each server (interleaved)")
    ap.add_argument("--notebook", type=Path, default=QUICKSTART, help="the notebook to serve")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = ap.parse_args()
    serve = ["-m", "mcp_notebook", "serve", "--transport", "stdio", str(args.notebook.resolve())]
    commands = {"sdk": [sys.executable, "-c", SDK_SERVER], "ours": [sys.executable, *serve]}
    log("warm-up: one untimed start of each (disk caches)")
    for command in commands.values():
        time_start(command)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    cells: list[float] = []
    for round_number in range(args.rounds):
        for name, command in commands.items():
            samples[name].append(time_start(command))
        cells.append(notebook_time(args.notebook))
        initialize = ", ".join(f"{n} {samples[n][-1][0]:.3f}" for n in commands)
        listing = ", ".join(f"{n} {samples[n][-1][1]:.3f}" for n in commands)
        log(
            f"round {round_number + 1}/{args.rounds}: initialize {initialize}; "
            f"tools/list {listing}; notebook {cells[-1]:.3f} s"
        )
    return report(samples, cells, args)


def report(samples: dict[str, list[tuple[float, float]]], cells: list[float], args) -> int:
    median = {
        name: (statistics.median(s[0] for s in runs), statistics.median(s[1] for s in runs))
        for name, runs in samples.items()
    }
    notebook = statistics.median(cells)
    print(f"start-up, seconds from spawn, median of {args.rounds} (stdio, {PROTOCOL})")
    print(f"{'server':<44}{'initialize':>12}{'tools/list':>12}")
    labels = {"sdk": "mcp SDK stdio server (one tool)", "ours": f"serve {args.notebook.name}"}
    for name, (initialize, listed) in median.items():
        print(f"{labels[name]:<44}{initialize:>12.3f}{listed:>12.3f}")
    print(f"{'the notebook cells alone (a kernel that is up)':<44}{'':>12}{notebook:>12.3f}")
    sdk_init, sdk_list = median["sdk"]
    ours_init, ours_list = median["ours"]
    list_target = sdk_list + notebook + LIST_SLACK
    init_met, list_met = ours_init <= sdk_init, ours_list <= list_target
    print(
        f"\ninitialize: {ours_init:.3f} s, target <= the SDK's {sdk_init:.3f} s: "
        f"{'MET' if init_met else 'NOT MET'}"
    )
    print(
        f"first tools/list: {ours_list:.3f} s, target <= SDK {sdk_list:.3f} + notebook "
        f"{notebook:.3f} + {LIST_SLACK} = {list_target:.3f} s: {'MET' if list_met else 'NOT MET'}"
    )
    if args.json:
        result = {
            "rounds": args.rounds,
            "notebook": str(args.notebook),
            "samples": samples,
            "notebook_cells_s": cells,
            "median": median,
            "targets": {"initialize": init_met, "tools/list": list_met},
        }
        Path(args.json).write_text(json.dumps(result, indent=2))
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
