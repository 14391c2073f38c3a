"""The one JSON policy (wire/jsontext.py) at its edges: nesting, numbers, surrogates."""

from __future__ import annotations

import json

import pytest

from mcp_notebook.protocol import jsonrpc
from mcp_notebook.protocol.jsonrpc import (
    INVALID_REQUEST,
    PARSE_ERROR,
    RpcError,
    encode_reply,
    error_response,
    parse,
)
from mcp_notebook.wire import ContentLengthFramer, FrameRefused, NdjsonFramer, jsontext


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


# -- lone surrogates: JSON grammar, but no Unicode text, and no reply could echo them -----
# Raw texts (the escapes stay escapes) and the id a reply may name.
LONE_SURROGATES = {
    "id": (r'{"jsonrpc":"2.0","id":"\udfff","method":"ping"}', None),
    "high-in-id": (r'{"jsonrpc":"2.0","id":"a\uD800","method":"ping"}', None),
    "method": (r'{"jsonrpc":"2.0","id":7,"method":"pi\udfffng"}', 7),
    "argument": (
        r'{"jsonrpc":"2.0","id":"x","method":"tools/call",'
        r'"params":{"name":"add","arguments":{"a":"\ud83d"}}}',
        "x",
    ),
    "key": (r'{"jsonrpc":"2.0","id":8,"method":"ping","params":{"\udc80":1}}', 8),
    "reversed-pair": (
        r'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"a":["\ude00\ud83d"]}}',
        9,
    ),
}


@pytest.mark.parametrize("text, request_id", LONE_SURROGATES.values(), ids=LONE_SURROGATES)
def test_a_lone_surrogate_is_refused_naming_the_id_a_reply_may_carry(text, request_id) -> None:
    with pytest.raises(jsontext.LoneSurrogate, match="lone surrogate") as caught:
        jsontext.loads(text.encode())
    assert caught.value.request_id == request_id
    with pytest.raises(RpcError) as refused:
        parse(text)
    assert refused.value.code == INVALID_REQUEST
    assert jsonrpc.refused_id(refused.value) == request_id
    # The reason itself can be sent: it names the place, never the surrogate raw.
    reply = json.loads(encode_reply(error_response(request_id, refused.value)))
    assert reply.get("id") == request_id and ("id" in reply) == (request_id is not None)


@pytest.mark.parametrize(
    "text, value",
    [
        (r'["\ud83d\ude00"]', ["\U0001f600"]),  # an escaped pair is one character
        ('["\U0001f600 é"]', ["\U0001f600 é"]),
        (r'["\\udfff"]', ["\\udfff"]),  # an escaped backslash, then plain letters
        (r'{"\ud83d\ude00":"\u00e9"}', {"\U0001f600": "é"}),
    ],
    ids=["escaped-pair", "raw-utf8", "escaped-backslash", "pair-in-key"],
)
def test_text_that_only_looks_like_a_surrogate_is_read(text, value) -> None:
    assert jsontext.loads(text.encode()) == value


@pytest.mark.parametrize("framer", [NdjsonFramer, ContentLengthFramer])
def test_framers_refuse_a_lone_surrogate_with_the_id_and_read_on(framer) -> None:
    stream = framer()
    items = []
    for text, _ in LONE_SURROGATES.values():
        body = text.encode()
        items += stream.feed(
            body + b"\n"
            if framer is NdjsonFramer
            else b"Content-Length: %d\r\n\r\n" % len(body) + body
        )
    items += stream.feed(stream.encode({"jsonrpc": "2.0", "id": 10, "method": "ping"}))
    assert [type(item) for item in items] == [FrameRefused] * len(LONE_SURROGATES) + [dict]
    assert [item.request_id for item in items[:-1]] == [i for _, i in LONE_SURROGATES.values()]


async def test_the_dispatcher_answers_a_lone_surrogate_with_one_error() -> None:
    from tests.unit.protocol.test_dispatch import Recorder

    for text, request_id in LONE_SURROGATES.values():
        reply = await Recorder().dispatcher().receive(text.encode(), "ctx")
        assert reply is not None and reply["error"]["code"] == INVALID_REQUEST
        assert reply.get("id") == request_id
        json.loads(encode_reply(reply))


def test_a_lone_surrogate_going_out_is_written_as_the_replacement_character() -> None:
    """A tool's result (or a file name read with surrogateescape) still goes out, as UTF-8."""
    result = {"content": [{"type": "text", "text": "a\udfffb \ud83d\ude00 \udc80"}]}
    data = encode_reply({"jsonrpc": "2.0", "id": 1, "result": result})
    text = json.loads(data.decode("utf-8"))["result"]["content"][0]["text"]
    assert text == "a\ufffdb \U0001f600 \ufffd"
    assert jsontext.loads(jsontext.dumps({"k\ud800": 1})) == {"k\ufffd": 1}


def test_a_number_past_pythons_digit_limit_is_named_in_jsons_words() -> None:
    # Before, the message ended "use sys.set_int_max_str_digits() to increase the limit":
    # advice about the server's Python, sent to the client.
    text = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + "7" * 5000 + "}}"
    with pytest.raises(RpcError) as refused:
        parse(text)
    assert refused.value.code == PARSE_ERROR
    assert "more than 4300 digits" in str(refused.value) and "sys." not in str(refused.value)
    reply = json.loads(encode_reply({"jsonrpc": "2.0", "id": 2, "result": {"n": 10**5000}}))
    assert reply["id"] == 2 and "more than 4300 digits" in reply["error"]["message"]
    assert "sys." not in reply["error"]["message"]
