"""Fuzz `mcp-notebook bridge` (its own process) in front of a notebook served over HTTP by
a real kernel: standard MCP of both eras in newline-delimited JSON."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given

from tests.conftest import start_server
from tests.fuzz.harness import (
    SETTINGS,
    TIMEOUT,
    FuzzedServer,
    Run,
    batches,
    key,
    standard_messages,
    stop,
)
from tests.kernels import Kernel
from tests.sources import ADD
from tests.stdio import INITIALIZE

SETUP = (
    ADD
    + """
mcp.prompt("summarize", "Summarize {topic} in {n} bullet points.", defaults={"n": "3"})
mcp.resource("sales,units\\nnorth,120\\n", name="sales", uri="df://sales")
"""
)
PING = {"jsonrpc": "2.0", "method": "ping"}


# The strategies' repr is long; hypothesis warns about it when it prints one.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    kernel = Kernel()
    try:
        served = start_server(kernel, SETUP, "%mcp start --port 0 --name fuzzed")
        server = FuzzedServer("bridge", "--url", served.url, "--token", served.token or "")
        server.send(INITIALIZE)
        server.reply_to(1, timeout=60)
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        fuzz = Run(server, PING)
        yield fuzz
        stop(server, fuzz, "mcp-notebook bridge")
        assert kernel.alive()
    finally:
        kernel.shutdown()


@pytest.mark.timeout(TIMEOUT)
@SETTINGS
@given(batch=batches(standard_messages, "ndjson"))
def test_every_request_gets_one_valid_reply(run, batch):
    run.send(*batch)


def test_still_serving_after_the_fuzz(run):
    server = run.server
    run.known.add(key("last"))
    call = {"name": "add", "arguments": {"a": 2, "b": 3}}
    server.send({"jsonrpc": "2.0", "id": "last", "method": "tools/call", "params": call})
    assert server.reply_to("last", timeout=60)["result"]["content"][0]["text"] == "5"
    run.check()
