"""One kernel serves the stress suite; the figures it measures go to test-artifacts/.

Every test adds what it measured to ``figures``; at the end they are written to
``test-artifacts/stress.json`` (gitignored) and printed as one summary line.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import portable
from tests.conftest import Served, start_server
from tests.kernels import Kernel

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"
SETUP = '''
import os, time

@mcp.tool
def echo(client: int, seq: int) -> str:
    """Say which client and which call this is."""
    return f"{client}:{seq}"

@mcp.tool
def nap(seconds: float) -> str:
    """Sleep on the kernel's main thread."""
    time.sleep(seconds)
    return "rested"
'''


@pytest.fixture(scope="package")
def served() -> Iterator[Served]:
    kernel = Kernel()
    try:
        yield start_server(kernel, SETUP)
    finally:
        kernel.shutdown()


@pytest.fixture(scope="package")
def kernel_pid(served: Served) -> int:
    return served.kernel.eval("os.getpid()")


@pytest.fixture(scope="package")
def figures() -> Iterator[dict[str, Any]]:
    measured: dict[str, Any] = {}
    yield measured
    if not measured:
        return
    ARTIFACTS.mkdir(exist_ok=True)
    record = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **measured}
    (ARTIFACTS / "stress.json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"\nstress figures: {json.dumps(measured)}", file=sys.stderr)


# The kernel's memory and open descriptors (handles on Windows), as the OS counts them.
rss_bytes = portable.rss
fd_count = portable.open_handles
