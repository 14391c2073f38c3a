"""The one JSON policy (wire/jsontext.py) at its edges: nesting and numbers."""

from __future__ import annotations

import json

import pytest

from mcp_notebook.protocol.jsonrpc import PARSE_ERROR, RpcError, encode_reply, parse
from mcp_notebook.wire import jsontext


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_up_to_the_limit_is_read() -> None:
    assert jsontext.loads(nested(jsontext.MAX_DEPTH))
    deep_object = '{"a":' * jsontext.MAX_DEPTH + "1" + "}" * jsontext.MAX_DEPTH
    assert jsontext.loads(deep_object)


@pytest.mark.parametrize(
    "text",
    [
        nested(jsontext.MAX_DEPTH + 1),
        nested(900),  # parsed once, then broke repr, validation and encoding further on
        '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + nested(200) + "}}",
    ],
    ids=["limit+1", "900", "inside-params"],
)
def test_deeper_nesting_is_a_parse_error_whatever_the_stack(text: str) -> None:
    with pytest.raises(jsontext.JsonTextError, match="nested too deeply"):
        jsontext.loads(text)
    with pytest.raises(RpcError) as caught:
        parse(text)
    assert caught.value.code == PARSE_ERROR


@pytest.mark.parametrize("number", ["1e999", "-1e999", "1E400"])
def test_a_number_that_overflows_to_infinity_is_refused(number: str) -> None:
    """Python reads 1e999 as inf: an Infinity that needs no Infinity token."""
    with pytest.raises(jsontext.JsonTextError, match="out of range"):
        jsontext.loads('{"a":' + number + "}")


def test_a_reply_that_is_not_json_becomes_an_error_to_its_id() -> None:
    """One reply per request, even when a result holds what JSON cannot carry."""
    answer = json.loads(encode_reply({"jsonrpc": "2.0", "id": "x", "result": {"v": 1e308 * 10}}))
    assert answer["id"] == "x" and answer["error"]["code"] == -32603
    assert "not JSON" in answer["error"]["message"]
