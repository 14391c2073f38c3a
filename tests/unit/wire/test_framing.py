"""Sans-IO framers: bytes in any pieces -> the same messages; bad bytes -> errors, no crash."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_notebook.wire import (
    ContentLengthFramer,
    FrameRefused,
    FramingError,
    JsonError,
    NdjsonFramer,
    detect,
    make_framer,
)
from mcp_notebook.wire.sniff import sniff_id

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
PONG = {"jsonrpc": "2.0", "id": 1, "result": {}}


def frame(body: bytes | str, *headers: str) -> bytes:
    """A Content-Length frame built by hand (not by the framer under test)."""
    data = body.encode() if isinstance(body, str) else body
    head = "".join(h + "\r\n" for h in headers) if headers else f"Content-Length: {len(data)}\r\n"
    return head.encode() + b"\r\n" + data


def feed_all(framer: Any, *chunks: bytes) -> list[Any]:
    items: list[Any] = []
    for chunk in chunks:
        items.extend(framer.feed(chunk))
    return items


def errors(items: list[Any]) -> list[FramingError]:
    return [i for i in items if isinstance(i, FramingError)]


def messages(items: list[Any]) -> list[Any]:
    return [i for i in items if not isinstance(i, FramingError)]


# -- Content-Length: the happy paths -------------------------------------------------------


def test_encode_counts_bytes_and_uses_crlf():
    body = json.dumps({"text": "héllo ✓ 日本 🎉"}, ensure_ascii=False, separators=(",", ":"))
    data = ContentLengthFramer().encode(json.loads(body))
    assert data == f"Content-Length: {len(body.encode())}\r\n\r\n".encode() + body.encode()
    assert len(body.encode()) > len(body)  # the length is bytes, not characters


def test_one_message_round_trips():
    framer = ContentLengthFramer()
    assert framer.feed(framer.encode(PING)) == [PING]
    assert framer.buffered == 0


def test_header_split_anywhere():
    data = frame(json.dumps(PING))
    for cut in range(1, len(data)):
        framer = ContentLengthFramer()
        assert framer.feed(data[:cut]) == []
        assert framer.feed(data[cut:]) == [PING], cut


def test_one_byte_at_a_time():
    framer = ContentLengthFramer()
    data = frame(json.dumps(PING)) + frame(json.dumps(PONG))
    assert feed_all(framer, *(data[i : i + 1] for i in range(len(data)))) == [PING, PONG]


def test_several_messages_in_one_read():
    framer = ContentLengthFramer()
    data = b"".join(frame(json.dumps({"jsonrpc": "2.0", "id": i, "method": "m"})) for i in range(5))
    assert [m["id"] for m in framer.feed(data)] == [0, 1, 2, 3, 4]


def test_multibyte_utf8_split_inside_a_character():
    body = json.dumps({"jsonrpc": "2.0", "method": "x", "params": {"s": "é🎉"}}, ensure_ascii=False)
    data = frame(body.encode())
    middle = data.index("🎉".encode()) + 2  # inside the 4-byte sequence
    framer = ContentLengthFramer()
    assert framer.feed(data[:middle]) == []
    assert framer.feed(data[middle:]) == [json.loads(body)]


@pytest.mark.parametrize(
    "headers",
    [
        ("Content-Length: {n}", "Content-Type: application/json"),
        ("Content-Type: application/vscode-jsonrpc; charset=utf-8", "Content-Length: {n}"),
        ("Content-Length: {n}", 'Content-Type: application/json; charset="UTF8"'),
        ("content-length:{n}",),  # names are case-insensitive; the space is optional
        ("CONTENT-LENGTH:   {n}  ",),
        ("Content-Length: {n}", "X-Extra: ignored"),
        ("Content-Length: 0{n}",),  # leading zeros are still digits
    ],
)
def test_header_variants(headers):
    body = json.dumps(PING).encode()
    data = frame(body, *(h.format(n=len(body)) for h in headers))
    assert ContentLengthFramer().feed(data + frame(body)) == [PING, PING]


def test_bare_newlines_and_blank_lines_between_messages_are_tolerated():
    body = json.dumps(PING).encode()
    data = b"Content-Length: %d\n\n" % len(body) + body + b"\r\n\r\n" + frame(body)
    assert ContentLengthFramer().feed(data) == [PING, PING]


def test_null_message_does_not_stop_the_read():
    framer = ContentLengthFramer()
    assert framer.feed(frame("null") + frame(json.dumps(PING))) == [None, PING]


# -- Content-Length: bad input is reported, skipped, and the next message still arrives ----


@pytest.mark.parametrize(
    "header, words",
    [
        ("Content-Length: -5", "negative"),
        ("Content-Length: abc", "not a number"),
        ("Content-Length: 12abc", "not a number"),
        ("Content-Length: 1e3", "not a number"),
        ("Content-Length: +12", "not a number"),
        ("Content-Length:", "not a number"),
        ("Content-Type: application/json", "Missing Content-Length"),
        ("Content-Length 12", "Malformed header"),
    ],
)
def test_bad_header_is_an_error_then_recovery(header, words):
    framer = ContentLengthFramer()
    items = framer.feed(frame('{"some": "body"}', header) + frame(json.dumps(PING)))
    assert len(errors(items)) == 1 and words in str(errors(items)[0])
    assert messages(items) == [PING]


def test_conflicting_lengths():
    items = ContentLengthFramer().feed(
        frame("{}", "Content-Length: 2", "Content-Length: 3") + frame(json.dumps(PING))
    )
    assert "Conflicting" in str(errors(items)[0]) and messages(items) == [PING]


def test_oversize_body_is_skipped_exactly_even_across_reads():
    framer = ContentLengthFramer(max_body=10)
    big = json.dumps({"jsonrpc": "2.0", "method": "x", "params": {"pad": "Content-Length: 3"}})
    data = frame(big) + frame(b"{}")
    items = feed_all(framer, data[:30], data[30:60], data[60:])
    assert len(errors(items)) == 1 and "exceeds the limit of 10" in str(errors(items)[0])
    assert messages(items) == [{}]


def test_an_oversize_frame_is_refused_with_its_id_and_the_next_frame_still_arrives():
    framer = ContentLengthFramer(max_body=1000)
    big = json.dumps({"jsonrpc": "2.0", "id": "big-1", "method": "x", "params": {"p": "a" * 5000}})
    data = frame(big) + frame(json.dumps(PING))
    items = feed_all(framer, *(data[i : i + 700] for i in range(0, len(data), 700)))
    assert isinstance(items[0], FrameRefused) and items[0].request_id == "big-1"
    assert "exceeds the limit of 1000" in str(items[0])
    assert items[1:] == [PING]


def test_a_lying_length_does_not_swallow_the_messages_after_it():
    # Content-Length: 99999999999 with a short body: refused at once, its id answered,
    # and the framer finds the next header instead of skipping 100 GB.
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    data = frame(body, "Content-Length: 99999999999") + frame(json.dumps(PING))
    items = ContentLengthFramer().feed(data)
    assert isinstance(items[0], FrameRefused) and items[0].request_id == 3
    assert items[1:] == [PING]


def test_a_length_of_thousands_of_digits_is_refused_not_a_crash():
    # int() of 5,000 digits raises ValueError (Python's int-digit limit).
    body = json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"})
    framer = ContentLengthFramer()
    items = framer.feed(frame(body, "Content-Length: " + "9" * 5000) + frame(json.dumps(PING)))
    assert isinstance(items[0], FrameRefused) and items[0].request_id == 4
    assert "of 5000 digits" in str(items[0])
    assert items[1:] == [PING]
    zeros = frame(json.dumps(PING), "Content-Length: " + "0" * 5000 + str(len(json.dumps(PING))))
    assert framer.feed(zeros) == [PING]  # leading zeros are still the same number


def test_a_refused_frame_is_dropped_as_it_arrives():
    framer = ContentLengthFramer(max_body=1000)
    framer.feed(b"Content-Length: 20000000\r\n\r\n" + b'{"jsonrpc":"2.0","id":9,"params":"')
    for _ in range(300):  # 19 MB of body, 64 KiB at a time
        assert framer.feed(b"a" * 65536) == []
        assert framer.buffered < 100
    assert framer.feed(b'"}' + frame(json.dumps(PING))) == [PING]


def test_a_refused_frame_waits_for_enough_of_its_start_to_read_the_id():
    framer = ContentLengthFramer(max_body=10)
    assert framer.feed(b'Content-Length: 50\r\n\r\n{"jsonrpc":"2.0","i') == []
    items = framer.feed(b'd":12,"method":"ping"}')
    assert isinstance(items[0], FrameRefused) and items[0].request_id == 12
    framer.feed(b"Content-Length: 99\r\n\r\n{")
    assert [i.request_id for i in framer.eof()] == [None]


def test_unsupported_charset_skips_the_body():
    body = json.dumps(PING).encode()
    items = ContentLengthFramer().feed(
        frame(body, f"Content-Length: {len(body)}", "Content-Type: text/json; charset=latin-1")
        + frame(body)
    )
    assert "charset" in str(errors(items)[0]) and messages(items) == [PING]


def test_header_without_end_is_bounded():
    framer = ContentLengthFramer(max_header=64)
    items = framer.feed(b"X-Junk: " + b"a" * 200 + b"\r\n")
    assert "too long" in str(errors(items)[0])
    assert framer.feed(frame(json.dumps(PING))) == [PING]


@pytest.mark.parametrize(
    "junk",
    [b"junk without a newline", b"junk\n", b"\x00\xff", b"a:b\r\nnot a header\r\n"],
)
def test_junk_run_into_the_next_header_does_not_take_its_frame(junk):
    # Junk that lacks a newline merges with the next header line; the frame is still read.
    framer = ContentLengthFramer()
    items = framer.feed(junk + frame(json.dumps(PING)))
    assert len(errors(items)) == 1 and messages(items) == [PING]


def test_garbage_before_a_frame():
    items = ContentLengthFramer().feed(b"hello there\r\n\r\n" + frame(json.dumps(PING)))
    assert len(errors(items)) == 1 and messages(items) == [PING]


@pytest.mark.parametrize("body", [b"{not json", b"", b"\xff\xfe{}", b'{"a": 1} trailing'])
def test_bad_body_is_a_json_error_and_framing_stays_aligned(body):
    framer = ContentLengthFramer()
    items = framer.feed(frame(body) + frame(json.dumps(PING)))
    assert isinstance(items[0], JsonError) and isinstance(items[0], FramingError)
    assert items[1:] == [PING]


def test_eof_inside_a_message():
    framer = ContentLengthFramer()
    framer.feed(b"Content-Length: 10\r\n\r\n{}")
    assert "inside a message body" in str(framer.eof()[0])
    framer.feed(b"Content-Len")
    assert "inside a header" in str(framer.eof()[0])
    assert framer.eof() == []


# -- newline-delimited JSON ----------------------------------------------------------------


def test_ndjson_lines():
    framer = NdjsonFramer()
    items = feed_all(framer, b'{"a":1}\n\n{"b"', b":2}\r\n  \n[1,2]\n")
    assert items == [{"a": 1}, {"b": 2}, [1, 2]]
    assert framer.encode({"s": "line\nbreak\u2028"}) == '{"s":"line\\nbreak\u2028"}\n'.encode()


def test_ndjson_bad_line_then_recovery():
    items = NdjsonFramer().feed(b"{oops\n" + json.dumps(PING).encode() + b"\n")
    assert isinstance(items[0], JsonError) and items[1:] == [PING]


def test_ndjson_over_long_line_is_dropped_to_its_end():
    framer = NdjsonFramer(max_body=16)
    items = feed_all(framer, b'{"x": "' + b"a" * 40, b"a" * 40 + b'"}\n{"ok":1}\n')
    assert len(errors(items)) == 1 and "longer than 16" in str(errors(items)[0])
    assert messages(items) == [{"ok": 1}]


def test_ndjson_over_long_line_is_refused_with_its_id_before_its_end_arrives():
    framer = NdjsonFramer(max_body=1000)
    start = b'{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"x":"'
    items = framer.feed(start + b"a" * 2000)
    assert isinstance(items[0], FrameRefused) and items[0].request_id == 17
    assert framer.buffered == 0  # what arrives of the line is dropped
    items = feed_all(framer, b"a" * 5000, b'"}}\n' + json.dumps(PING).encode() + b"\n")
    assert items == [PING]


def test_ndjson_over_long_complete_line_is_refused_with_its_id():
    framer = NdjsonFramer(max_body=100)
    line = json.dumps({"jsonrpc": "2.0", "id": "x", "method": "m", "params": {"p": "a" * 200}})
    items = framer.feed(line.encode() + b"\n" + json.dumps(PING).encode() + b"\n")
    assert isinstance(items[0], FrameRefused) and items[0].request_id == "x"
    assert items[1:] == [PING]


def test_ndjson_eof_keeps_a_last_line_without_newline():
    framer = NdjsonFramer()
    assert framer.feed(b'{"a":1}') == []
    assert framer.eof() == [{"a": 1}]


# -- detection -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "first, kind",
    [
        (b"", None),
        (b"  \r\n", None),
        (b"C", None),
        (b"content-le", None),
        (b"Content-T", None),
        (b"Content-Length: 81\r\n", "content-length"),
        (b"\r\ncontent-length:81", "content-length"),
        (b"Content-Type: application/json\r\n", "content-length"),
        (b"{", "ndjson"),
        (b'  {"jsonrpc"', "ndjson"),
        (b"[", "ndjson"),
        (b"Contents", "ndjson"),
        (b"hello", "ndjson"),
    ],
)
def test_detect(first, kind):
    assert detect(first) == kind


def test_detected_framer_gets_the_detection_bytes_too():
    stream = frame(json.dumps(PING))
    kind = detect(stream[:3])
    assert kind is None
    kind = detect(stream[:20])
    assert kind == "content-length"
    assert make_framer(kind).feed(stream) == [PING]


# -- properties: any split of any message sequence gives the messages back -----------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
json_messages = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "method": st.text(min_size=1)},
    optional={"id": st.integers() | st.text(), "params": st.dictionaries(st.text(), json_values)},
)


def _splits(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    sequence=st.lists(json_messages, min_size=1, max_size=6),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
    kind=st.sampled_from(["content-length", "ndjson"]),
)
def test_random_splits_round_trip(sequence, cuts, kind):
    framer = make_framer(kind)
    data = b"".join(framer.encode(m) for m in sequence)
    assert detect(data) == kind
    assert feed_all(framer, *_splits(data, cuts)) == sequence
    assert framer.eof() == []


@settings(max_examples=200)
@given(
    sequence=st.lists(json_messages, min_size=1, max_size=4),
    content_type=st.lists(st.booleans(), min_size=4, max_size=4),
    gaps=st.lists(st.sampled_from([b"", b"\r\n", b"\n", b"\r\n\r\n"]), min_size=4, max_size=4),
    cuts=st.lists(st.integers(min_value=0), max_size=8),
)
def test_content_length_header_variants_round_trip(sequence, content_type, gaps, cuts):
    data = b""
    for message, typed, gap in zip(sequence, content_type, gaps, strict=False):
        body = json.dumps(message, ensure_ascii=False).encode()
        headers = [f"Content-Length: {len(body)}"]
        if typed:
            headers.insert(0, "Content-Type: application/json; charset=utf-8")
        data += gap + frame(body, *headers)
    assert feed_all(ContentLengthFramer(), *_splits(data, cuts)) == sequence


@settings(max_examples=300)
@given(junk=st.binary(max_size=300), cuts=st.lists(st.integers(min_value=0), max_size=6))
def test_arbitrary_bytes_never_raise(junk, cuts):
    for framer in (ContentLengthFramer(max_body=64, max_header=64), NdjsonFramer(max_body=64)):
        items = feed_all(framer, *_splits(junk, cuts)) + framer.eof()
        assert all(
            isinstance(i, (FramingError, dict, list, str, int, float, type(None))) for i in items
        )


@settings(max_examples=200)
@given(junk=st.binary(max_size=200).filter(lambda b: b"\n" not in b))
def test_ndjson_recovers_at_the_next_line(junk):
    framer = NdjsonFramer(max_body=64)
    assert framer.feed(junk + b"\n" + framer.encode(PING))[-1] == PING


@settings(max_examples=200)
@given(junk=st.binary(max_size=200).filter(lambda b: b"ength" not in b.lower()))
def test_content_length_recovers_after_junk_without_a_length_header(junk):
    # Junk that declares no length cannot swallow what follows: the next frame is read.
    framer = ContentLengthFramer(max_header=64)
    items = framer.feed(junk + b"\r\n\r\n" + framer.encode(PING))
    assert items[-1] == PING


# -- reading the id of a frame too large to decode ------------------------------------------


@pytest.mark.parametrize(
    "start, outcome",
    [
        (b'{"jsonrpc":"2.0","id":5,"method":"x","params":{"p":"', ("id", 5)),
        (b' {"method":"x", "id" : "a\\"b\\u00e9", "params":[', ("id", 'a"b\u00e9')),
        (b'{"params":{"id":1,"n":[{"]":"}"}],"s":"}"},"id":-7,"x"', ("id", -7)),
        (b'{"jsonrpc":"2.0","id":123', ("more", None)),  # "123" may go on
        (b'{"jsonrpc":"2.0","params":{"a":[1,2', ("more", None)),
        (b'{"jsonrpc":"2.0","method":"n"}', ("no-id", None)),  # a notification
        (b'{"jsonrpc":"2.0","id":1.5,"method":"x"', ("no-id", None)),
        (b'{"jsonrpc":"2.0","id":true,"method":"x"', ("no-id", None)),
        (b'{"jsonrpc":"2.0","id":null,"method":"x"', ("no-id", None)),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"x"', ("no-id", None)),
        (b'[{"jsonrpc":"2.0","id":1}', ("no-id", None)),
        (b"hello", ("no-id", None)),
        (b'{"i\\"d":1,"id":2,', ("id", 2)),
        (b'{"id":' + b"9" * 5000 + b",", ("no-id", None)),  # over the int-digit limit
    ],
)
def test_sniff_id(start, outcome):
    assert sniff_id(start) == outcome


@settings(max_examples=300)
@given(message=json_messages, cut=st.integers(min_value=0))
def test_sniff_id_agrees_with_the_decoder_on_any_prefix(message, cut):
    data = json.dumps(message, ensure_ascii=False).encode()
    prefix = data[: cut % (len(data) + 1)]
    outcome, value = sniff_id(prefix)
    readable = isinstance(message.get("id"), (str, int))
    if outcome == "id":
        assert readable and value == message["id"]
    if outcome == "no-id":
        assert not readable
    assert sniff_id(data) == (("id", message["id"]) if readable else ("no-id", None))


@settings(max_examples=300)
@given(
    request_id=st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    cut=st.integers(min_value=0),
)
def test_sniff_id_never_reads_a_number_cut_short(request_id, cut):
    data = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "m"}).encode()
    outcome, value = sniff_id(data[: cut % (len(data) + 1)])
    readable = isinstance(request_id, (str, int))
    assert outcome == "more" or (outcome == "id") == readable
    assert outcome != "id" or value == request_id
