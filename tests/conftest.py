from __future__ import annotations

import asyncio
import os
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from .kernels import Kernel

# Kernels, discovery files and subprocesses of this run stay out of the user's runtime dir.
os.environ["JUPYTER_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="mcp-notebook-tests-")


@dataclass
class Served:
    kernel: Kernel
    url: str
    token: str | None

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    """A real ipykernel for the tests of one module."""
    k = Kernel()
    try:
        yield k
    finally:
        k.shutdown()


def start_server(kernel: Kernel, setup: str, start: str = "%mcp start --port 0") -> Served:
    kernel.run("%load_ext mcp_notebook")
    kernel.run(setup)
    kernel.run(start)
    return Served(kernel, kernel.eval("mcp.url"), kernel.eval("mcp.token"))


@asynccontextmanager
async def connect(served: Served, mode: str = "auto", **client_options) -> AsyncIterator[Client]:
    """The official SDK client, connected to the notebook's endpoint with its token."""
    async with (
        httpx2.AsyncClient(headers=served.headers, timeout=30) as http,
        Client(
            streamable_http_client(served.url, http_client=http), mode=mode, **client_options
        ) as client,
    ):
        yield client


MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])


@pytest.fixture(scope="module")
def kernel_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A loop on a thread of its own, standing in for a kernel's main thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="kernel-main", daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
