"""The call history's bounds, without a kernel: what it keeps of big calls, and how much."""

from __future__ import annotations

import pytest

from mcp_notebook.protocol.abbreviate import CUT, abbreviate, estimate, is_cut
from mcp_notebook.protocol.calls import (
    DEBUGGABLE,
    REJECTED_BYTES,
    CallLog,
    CallRecord,
    Interrupted,
)

MIB = 1024 * 1024


def ran(log: CallLog, arguments: dict, **finish) -> CallRecord:
    record = log.add(CallRecord("tools/call", "tool", arguments, "client"))
    record.set_status("running")
    record.finish(finish.pop("status", "done"), **finish)
    return record


def test_a_rejected_call_keeps_a_short_copy_that_says_how_big_it_was() -> None:
    log = CallLog()
    record = log.add(CallRecord("tools/call", "tool", {"n": "x" * (4 * MIB)}, "client"))
    record.finish("error", error=ValueError(repr("x" * (4 * MIB)) + " is not an integer"))
    assert record.status == "error"
    assert len(record.arguments["n"]) <= REJECTED_BYTES
    assert record.arguments["n"].endswith(f"{CUT}{4 * MIB} characters]")
    assert len(str(record.error)) <= REJECTED_BYTES and isinstance(record.error, ValueError)
    assert len(record.traceback) <= 2 * REJECTED_BYTES
    assert record.abbreviated == {"arguments", "error"}
    assert log.bytes < 4 * REJECTED_BYTES


def test_a_denied_call_keeps_a_short_copy_even_of_small_arguments() -> None:
    log = CallLog()
    record = log.add(CallRecord("tools/call", "tool", {"sql": "y" * 50_000}, "client"))
    record.set_status("awaiting confirmation")
    record.finish("denied", error=RuntimeError("The user declined"))
    assert len(record.arguments["sql"]) <= REJECTED_BYTES


def test_big_results_are_abbreviated_beyond_the_per_call_size() -> None:
    log = CallLog(max_call_bytes=64 * 1024)
    result = {"content": [{"type": "text", "text": "z" * (20 * MIB)}], "isError": False}
    record = ran(log, {"a": 1}, result=result)
    assert record.result is not result
    assert len(record.result["content"][0]["text"]) <= 64 * 1024
    assert is_cut(record.result["content"][0]["text"])
    assert record.result["isError"] is False
    assert record.abbreviated == {"result"}
    assert len(result["content"][0]["text"]) == 20 * MIB  # what the client got is untouched
    small = ran(log, {"a": 2}, result={"content": [{"type": "text", "text": "ok"}]})
    assert small.abbreviated == frozenset()


def test_the_history_drops_its_oldest_calls_beyond_max_bytes() -> None:
    log = CallLog(max_bytes=2 * MIB, max_call_bytes=MIB)
    records = [ran(log, {"text": "w" * 400_000}) for _ in range(10)]
    assert log.bytes <= log.max_bytes
    assert list(log) == records[-len(log) :] and len(log) < 10
    log.max_bytes = MIB
    assert log.bytes <= MIB and list(log)[-1] is records[-1]
    with pytest.raises(ValueError):
        log.max_bytes = 0


def test_abbreviated_structures_keep_their_shape_and_say_what_is_left_out() -> None:
    value = {
        "rows": list(range(100_000)),
        "image": {"type": "image", "data": "A" * 100_000, "mimeType": "image/png"},
        "raw": b"\x00" * 10,
    }
    copy = abbreviate(value, 2_000)
    assert estimate(copy, 10_000) <= 2_200
    assert copy["rows"][-1] == f"{CUT}{100_000 - len(copy['rows']) + 1} more items]"
    assert copy["rows"][:3] == [0, 1, 2]
    assert value["rows"][-1] == 99_999  # the original is untouched
    # Half an image is no image: base64 payloads go whole, their neighbours stay.
    image = abbreviate(value["image"], 500)
    assert image == {"type": "image", "data": f"{CUT}100000 characters]", "mimeType": "image/png"}
    assert abbreviate(value["raw"], 500) == f"{CUT}10 bytes]"


def test_estimates_stop_early_on_huge_values() -> None:
    huge = [{"k": i} for i in range(1_000_000)]
    assert 1_000 < estimate(huge, 1_000) < 1_100


def test_interrupted_calls_have_their_own_status() -> None:
    log = CallLog()
    assert ran(log, {}, status="error", error=Interrupted()).status == "interrupted"
    assert ran(log, {}, status="error", error=KeyboardInterrupt()).status == "interrupted"


def test_only_the_last_failures_keep_their_frames_for_the_debugger() -> None:
    log = CallLog()

    def fail(n: int) -> BaseException:
        big_local = "v" * MIB  # what a frame would keep alive  # noqa: F841
        try:
            raise RuntimeError(f"failure {n}")
        except RuntimeError as exc:
            return exc

    records = [ran(log, {}, status="error", error=fail(n)) for n in range(DEBUGGABLE + 3)]
    assert [r.error.__traceback__ is None for r in records] == [True] * 3 + [False] * DEBUGGABLE
    assert all("raise RuntimeError" in r.traceback for r in records)  # the text stays


def test_an_exception_whose_str_fails_is_still_recorded() -> None:
    class Odd(Exception):
        def __str__(self) -> str:
            raise ValueError("no")

    record = ran(CallLog(), {}, status="error", error=Odd())
    assert record.status == "error" and "Odd" in record.traceback


def test_big_output_keeps_its_text_cut_and_notes_displays_left_out() -> None:
    log = CallLog(max_call_bytes=10_000)
    record = log.add(CallRecord("tools/call", "tool", {}, "client"))
    record.set_status("running")
    record.output += [
        {"output_type": "stream", "name": "stdout", "text": "line\n" * 5000},
        {"output_type": "display_data", "data": {"image/png": "A" * 100_000}, "metadata": {}},
    ]
    record.finish("done", result={"content": []})
    text, note = record.output
    assert is_cut(text["text"]) and text["text"].startswith("line\n")
    assert note["output_type"] == "stream" and "display_data" in note["text"]
    assert "output" in record.abbreviated
    assert estimate(record.output, 10**9) <= 10_000
    # Thousands of small displays: the first ones, then a note of how many more there were.
    many = log.add(CallRecord("tools/call", "tool", {}, "client"))
    many.set_status("running")
    many.output += [{"output_type": "display_data", "data": {"text/plain": "x" * 50}}] * 5000
    many.finish("done", result={"content": []})
    assert estimate(many.output, 10**9) <= 10_000
    assert "more outputs left out" in many.output[-1]["text"]
