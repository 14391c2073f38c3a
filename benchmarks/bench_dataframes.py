#!/usr/bin/env python
"""Pages of a large DataFrame through the resource code path vs ``to_csv`` of the whole frame.

Every case is a ``resources/read`` handled by the sans-IO server (``Server.handle``) over
a ``NotebookMCP`` registry -- the path a client's request takes after the transport --
except the baseline, which is what serving the frame whole would cost:
``frame.to_csv(index=False)``. Time is the median of ``--repeat`` runs without tracing;
peak memory is measured in one more run under ``tracemalloc`` (which slows code down, so
it is not timed). Table on stdout, progress on stderr. See README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server, Session
from mcp_notebook.registry import dataframes


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def make_frame(rows: int) -> pd.DataFrame:
    """Ten columns: six floats (1 % NaN in one), two ints, a category and a timestamp."""
    rng = np.random.default_rng(0)
    columns: dict[str, Any] = {f"f{i}": rng.random(rows) for i in range(6)}
    columns["f0"][rng.random(rows) < 0.01] = np.nan
    columns["i0"] = np.arange(rows)
    columns["i1"] = rng.integers(0, 1000, rows)
    columns["region"] = pd.Categorical(rng.choice(["north", "south", "east", "west"], rows))
    columns["day"] = pd.date_range("2024-01-01", periods=rows, freq="min")
    return pd.DataFrame(columns)


def measure(work: Callable[[], Any], repeat: int) -> tuple[float, int, int]:
    """(median seconds, peak traced bytes, size of the result's text in bytes)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    gc.collect()
    tracemalloc.start()
    try:
        work()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return statistics.median(times), peak, len(result.encode())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per page case")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    log(f"building a {args.rows:,} x 10 frame")
    frame = make_frame(args.rows)
    mcp = NotebookMCP()
    mcp.resource(frame, name="big")
    server, session = Server(mcp.registry), Session()
    loop = asyncio.new_event_loop()

    def read(uri: str) -> Callable[[], str]:
        message = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}

        def work() -> str:
            reply = loop.run_until_complete(server.handle(message, session))
            return reply["result"]["contents"][0]["text"]

        return work

    middle, timed = args.rows // 2, args.repeat
    cases: list[tuple[str, Callable[[], str], int]] = [
        ("first page, 100 rows, csv", read("df://big?limit=100"), timed),
        ("first page, 1000 rows, csv (plain read)", read("df://big"), timed),
        ("middle page, 100 rows, csv", read(f"df://big?offset={middle}&limit=100"), timed),
        (
            "middle page, 100 rows, json",
            read(f"df://big?offset={middle}&limit=100&format=json"),
            timed,
        ),
        ("schema (df://big/schema)", read("df://big/schema"), timed),
        ("change fingerprint (after each cell)", lambda: str(dataframes.fingerprint(frame)), timed),
        ("baseline: whole frame to_csv", lambda: frame.to_csv(index=False), 1),
    ]

    results = []
    for label, work, repeat in cases:
        log(f"{label} ...")
        seconds, peak, size = measure(work, repeat)
        results.append({"case": label, "seconds": seconds, "peak_bytes": peak, "bytes": size})
    loop.close()

    base = results[-1]
    megabytes = frame.memory_usage().sum() / 1e6
    print(f"\n{args.rows:,} rows x 10 columns ({megabytes:.0f} MB in memory)")
    print("| case | time | peak memory | text | time ratio | memory ratio |")
    print("|---|--:|--:|--:|--:|--:|")
    for row in results:
        cells = [
            row["case"],
            f"{row['seconds'] * 1e3:.1f} ms",
            f"{row['peak_bytes'] / 1e6:.2f} MB",
            f"{row['bytes'] / 1e3:.0f} kB",
            f"{base['seconds'] / row['seconds']:.0f}x",
            f"{base['peak_bytes'] / max(row['peak_bytes'], 1):.0f}x",
        ]
        print("| " + " | ".join(cells) + " |")
    print("\nratios: baseline / case (higher is better for the case)")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"rows": args.rows, "results": results}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
