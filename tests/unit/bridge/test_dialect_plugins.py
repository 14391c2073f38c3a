"""Dialects are plug-ins: one registered with the bridge gets the connection whose first
message it sniffs (the endpoint's: tests/unit/transports/test_endpoint_cases.py).

The seed dialect is the built-in plug-in of both (tests/unit/protocol/test_seed_dialect.py,
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
