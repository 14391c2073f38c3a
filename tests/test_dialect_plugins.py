"""Dialects are plug-ins: one registered with the endpoint gets the POSTs it claims, and one
registered with the bridge gets the connection whose first message it sniffs.

The seed dialect is the built-in plug-in of both (tests/test_seed_dialect.py,
tests/kernel/test_http_seed.py, tests/kernel/test_bridge_seed.py); these register a toy
one, as a third party would, and take it away again.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from mcp_notebook.bridge import dialects as bridge_dialects
from mcp_notebook.bridge.relay import Bridge
from mcp_notebook.bridge.upstream import Target
from mcp_notebook.transports import dialects

from .test_endpoint_cases import Endpoint, endpoint  # noqa: F401 (the fixture)

TOY = "application/x-toy"


def _claim(body: bytes, message: Any) -> Any:
    return message.get("toy") if isinstance(message, dict) else None


async def _serve(handler: Any, server: Any, claim: Any) -> None:
    handler.set_header("Content-Type", TOY)
    handler.finish(f"toy says {claim}".encode())


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    dialects.registered()  # the built-ins first, so that the toy is added to them
    monkeypatch.setitem(dialects._registered, "toy", dialects.Dialect("toy", TOY, _claim, _serve))


def test_a_registered_dialect_answers_what_it_claims(toy: None, endpoint: Endpoint) -> None:
    headers = {"Content-Type": TOY, "Accept": TOY}
    status, answer, data = endpoint.send("POST", {"toy": "hello", "id": 4}, headers)
    if endpoint.kind == "tornado":
        assert (status, answer["content-type"], data) == (200, TOY, b"toy says hello")
    else:  # the ASGI app serves no plug-in: it says which dialect it refused
        body = json.loads(data)
        assert (status, body["id"], body["error"]["code"]) == (400, 4, -32600)
        assert "the toy dialect" in body["error"]["message"]
    # What it does not claim is standard MCP, as before.
    status, _, data = endpoint.send("POST", {"jsonrpc": "2.0", "id": 5, "method": "ping"})
    assert (status, json.loads(data)["error"]["code"]) == (400, -32600)  # no session


def test_without_the_plug_in_its_media_type_is_refused(endpoint: Endpoint) -> None:
    headers = {"Content-Type": TOY, "Accept": TOY}
    assert endpoint.send("POST", {"toy": "hello", "id": 4}, headers)[0] == 415


class ToyRelay:
    def __init__(self, target: Target, channel: Any) -> None:
        self.fed: list[Any] = []

    def feed(self, message: Any) -> None:
        self.fed.append(message)

    def settle(self, timeout: float) -> bool:
        return True

    def end_streams(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_the_bridge_hands_a_sniffed_connection_to_its_plug_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    toy = bridge_dialects.Dialect("toy", lambda first: first.get("toy") == 1, ToyRelay)
    bridge_dialects.sniff({})  # the built-ins first
    monkeypatch.setitem(bridge_dialects._registered, "toy", toy)
    bridge = Bridge(Target(url="http://127.0.0.1:9/mcp"), io.BytesIO())
    bridge.feed({"toy": 1})
    bridge.feed({"toy": 2})
    assert isinstance(bridge.relay, ToyRelay) and bridge.relay.fed == [{"toy": 1}, {"toy": 2}]
    assert bridge_dialects.sniff({"jsonrpc": "2.0", "id": 1, "method": "ping"}) is None


def test_the_seed_dialect_is_on_by_default_in_both_registries() -> None:
    seed = {"jsonrpc": "2.0", "id": 1, "method": "mcp/listTools"}
    sniffed = bridge_dialects.sniff(seed)
    assert sniffed is not None and sniffed.name == "MCP v1.0 (seed 000)"
    claimed = dialects.claim(json.dumps(seed).encode(), seed)
    assert claimed is not None and claimed.dialect.name == "seed"
    assert claimed.claim == ([seed], "single")
