#!/usr/bin/env python
"""What the MCP panel costs a call: ``tools/call`` p50 with a panel feed open vs none.

One real kernel serves ``add`` (bench_http.py's); a stand-in front end (this process, on the
kernel's shell and iopub channels) opens a comm to ``mcp_notebook.panel`` as the JupyterLab
extension does and reads every update the kernel batches. Rounds alternate closed / open on
one keep-alive connection, so machine load hits both alike. Target: open within 5 % of
closed. Table on stdout, logs on stderr. See README.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import uuid

from bench_http import CALLS, connect, kernel_session, log

PANEL = "mcp_notebook.panel"  # mcp_notebook/ui/panelfeed.py


class Watcher:
    """Reads the kernel's iopub the way a browser tab does: every panel update is taken."""

    def __init__(self, kc) -> None:
        self.kc, self.updates, self.snapshots = kc, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                message = self.kc.get_iopub_msg(timeout=0.2)
            except Exception:
                continue
            if message["msg_type"] == "comm_msg":
                kind = message["content"]["data"].get("kind")
                self.updates += kind == "update"
                self.snapshots += kind == "snapshot"

    def send(self, kind: str, content: dict) -> None:
        self.kc.shell_channel.send(self.kc.session.msg(kind, content))

    def open(self) -> str:
        comm_id, seen = uuid.uuid4().hex, self.snapshots
        self.send("comm_open", {"comm_id": comm_id, "target_name": PANEL, "data": {}})
        deadline = time.monotonic() + 30
        while self.snapshots == seen:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    "the kernel sent no panel snapshot (is mcp_notebook new enough?)"
                )
            time.sleep(0.01)
        return comm_id

    def close(self, comm_id: str) -> None:
        self.send("comm_close", {"comm_id": comm_id, "data": {}})

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=4000, help="calls per state (default 4000)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", help="write the numbers here too")
    args = parser.parse_args()
    samples: dict[str, list[float]] = {"closed": [], "open": []}
    params = CALLS["tools/call"]
    with kernel_session() as (url, kc):
        watcher = Watcher(kc)
        client = connect(url)
        try:
            for _ in range(args.rounds):
                for state in ("closed", "open"):
                    comm_id = watcher.open() if state == "open" else None
                    for _ in range(50):  # re-warm after switching
                        client.call("tools/call", params)
                    for _ in range(max(1, args.requests // args.rounds)):
                        t0 = time.perf_counter()
                        client.call("tools/call", params)
                        samples[state].append((time.perf_counter() - t0) * 1e3)
                    if comm_id is not None:
                        watcher.close(comm_id)
        finally:
            client.close()
            watcher.stop()
    p50 = {state: statistics.median(v) for state, v in samples.items()}
    p99 = {state: statistics.quantiles(v, n=100)[98] for state, v in samples.items()}
    ratio = p50["open"] / p50["closed"]
    calls = len(samples["open"]) + 50 * args.rounds
    log(f"{watcher.updates} panel updates for {calls} calls made with the panel open")
    print("| tools/call, in-kernel server | p50 | p99 |")
    print("|---|--:|--:|")
    for state in ("closed", "open"):
        print(f"| panel {state} | {p50[state]:.3f} ms | {p99[state]:.3f} ms |")
    verdict = "met" if ratio <= 1.05 else "NOT met"
    print(f"\nopen / closed p50: {ratio:.3f} (target <= 1.05: {verdict})")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(
                {"p50_ms": p50, "p99_ms": p99, "ratio": ratio, "updates": watcher.updates}, out
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
