"""Fuzz `mcp-notebook serve --transport stdio` in Content-Length frames, speaking the seed
dialect ("MCP v1.0"): its methods, standard ones it does not know, and lying lengths."""

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
    seed_messages,
    standard_messages,
    stop,
)

QUICKSTART = str(Path(__file__).resolve().parents[3] / "notebooks" / "quickstart.ipynb")
LIST_TOOLS = {"jsonrpc": "2.0", "method": "mcp/listTools"}
SEED_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"clientInfo": {"name": "fuzz-seed", "version": "1"}},
}


# The strategies' repr is long; hypothesis warns about it when it prints one.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    server = FuzzedServer("serve", QUICKSTART, "--transport", "stdio", framing="content-length")
    server.send(SEED_INITIALIZE)
    assert "result" in server.reply_to(1, timeout=120)
    server.send({"jsonrpc": "2.0", "method": "initialized"})
    fuzz = Run(server, LIST_TOOLS)
    yield fuzz
    stop(server, fuzz, "serve --transport stdio, Content-Length (seed dialect)")


@pytest.mark.timeout(TIMEOUT)
@SETTINGS
@given(batch=batches(seed_messages | standard_messages, "content-length"))
def test_every_request_gets_one_valid_reply(run, batch):
    run.send(*batch)


def test_still_serving_after_the_fuzz(run):
    server = run.server
    run.known.add(key("last"))
    add = {"id": "mcp://quickstart/tools/add:v1", "arguments": {"a": 2, "b": 3}}
    server.send({"jsonrpc": "2.0", "id": "last", "method": "mcp/executeTool", "params": add})
    assert server.reply_to("last", timeout=60)["result"] == {"output": {"result": 5}}
    run.check()
