"""Mirrored tool arguments (``Mcp-Param-*``): what the bridge sends, the server accepts.

Both ends render a value with ``protocol.mirror``; these tests hold the bridge's headers
against the server's check for the values a JSON client may send.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mcp_notebook.bridge.headers import request_headers
from mcp_notebook.protocol.mirror import header_matches, header_text, mirrored_paths
from mcp_notebook.transports.headers import mismatch

SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
        "region": {"type": "string", "x-mcp-header": "Region"},
    },
}
TOOLS = {"route": SimpleNamespace(input_schema=SCHEMA)}


def call(**arguments):
    params = {"name": "route", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


@pytest.mark.parametrize(
    "arguments",
    [
        {"count": 42},
        {"count": 42.0},  # an integer a JSON writer spelled with a fraction
        {"count": -7.0, "dry": False},
        {"count": 0, "dry": True, "region": "Zürich"},
        {"region": " padded "},
        {"region": "=?base64?literal?="},
        {"count": None, "region": "eu"},
    ],
)
def test_the_servers_check_accepts_what_the_bridge_mirrors(arguments):
    message = call(**arguments)
    headers = request_headers(message, "2026-07-28", mirrored_paths(SCHEMA))
    assert mismatch(message, headers, TOOLS) is None


def test_integers_render_in_decimal_and_compare_as_numbers():
    assert header_text(42.0) == "42"
    assert header_text(True) == "true"
    assert header_text(1.5) is None  # not an integer: no header
    # The spec: the server compares integers numerically, so 42.0 and 42 are equal.
    assert header_matches("42.0", 42) and header_matches("42", 42.0)
    assert header_matches("4.2e1", 42)
    assert not header_matches("43", 42)
    # int() would take these; a header carrying them does not say 42.
    for spelling in ("4_2", " 42", "٤٢", "+42", "042", "42."):
        assert not header_matches(spelling, 42), spelling
    assert not header_matches("1", True)  # a boolean is not a number here
    assert not header_matches("9" * 5000, 42)


def test_a_missing_method_or_name_header_is_called_missing():
    # Before: "Mcp-Method header None does not match ...", Python's None for an absent header.
    assert mismatch(call(count=1), {}, TOOLS) == (
        "the Mcp-Method header is missing (the method is 'tools/call')"
    )
    assert mismatch(call(count=1), {"Mcp-Method": "tools/call"}, TOOLS) == (
        "the Mcp-Name header is missing (params.name is 'route')"
    )
    wrong = mismatch(call(count=1), {"Mcp-Method": "tools/list"}, TOOLS)
    assert wrong == "Mcp-Method header 'tools/list' does not match the method 'tools/call'"
