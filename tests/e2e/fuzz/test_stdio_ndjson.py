"""Fuzz `mcp-notebook serve --transport stdio` in newline-delimited JSON (standard MCP of
both eras: handshake-era requests and 2026-07-28 requests with ``_meta``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given

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
from tests.stdio import INITIALIZE

QUICKSTART = str(Path(__file__).resolve().parents[3] / "notebooks" / "quickstart.ipynb")
PING = {"jsonrpc": "2.0", "method": "ping"}


# The strategies' repr is long; hypothesis warns about it when it prints one.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    server = FuzzedServer("serve", QUICKSTART, "--transport", "stdio")
    server.send(INITIALIZE)
    server.reply_to(1, timeout=120)
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    fuzz = Run(server, PING)
    yield fuzz
    stop(server, fuzz, "serve --transport stdio, NDJSON")


@pytest.mark.timeout(TIMEOUT)
@SETTINGS
@given(batch=batches(standard_messages, "ndjson"))
def test_every_request_gets_one_valid_reply(run, batch):
    run.send(*batch)


def test_still_serving_after_the_fuzz(run):
    server = run.server
    call = {"name": "add", "arguments": {"a": 2, "b": 3}}
    run.known.add(key("last"))
    server.send({"jsonrpc": "2.0", "id": "last", "method": "tools/call", "params": call})
    reply = server.reply_to("last", timeout=60)
    assert reply["result"]["content"][0]["text"] == "5"
    run.check()
