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
    image = abbreviate(value["image"], 1_000)
    assert image == {"type": "image", "data": f"{CUT}100000 characters]", "mimeType": "image/png"}
    assert abbreviate(value["raw"], 500) == f"{CUT}10 bytes]"


def test_estimates_stop_early_on_huge_values() -> None:
    huge = [{"k": i} for i in range(1_000_000)]
    assert 1_000 < estimate(huge, 1_000) < 1_500  # past the limit by one item at most


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


def nested(depth: int, leaf: object) -> object:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


@pytest.mark.parametrize("ran_first", [False, True])
def test_arguments_nested_too_deep_are_cut_whatever_their_size(ran_first: bool) -> None:
    log = CallLog()
    arguments = {"a": nested(40, "x" * (4 * MIB))}
    assert estimate(arguments, MIB) > MIB  # too deep counts as too big, however small
    assert estimate({"a": nested(40, 1)}, 10**9) > 10**9
    if ran_first:
        record = ran(log, arguments, status="error", error=ValueError("bad"))
        limit = log.max_call_bytes
    else:
        record = log.add(CallRecord("tools/call", "tool", arguments, "client"))
        record.finish("error", error=ValueError("a is not an integer"))
        limit = REJECTED_BYTES
    assert "arguments" in record.abbreviated
    assert estimate(record.arguments, 10**9) <= limit
    assert CUT in repr(record.arguments)
    if ran_first:  # room enough to reach the depth where a marker replaces what is deeper
        assert "nested too deep" in repr(record.arguments)
    assert log.bytes < limit + 4 * REJECTED_BYTES


def test_estimates_follow_python_memory_not_json_text() -> None:
    """What the history counts is what the values take in memory (the JSON text of parsed
    rows is about 6 times smaller); the estimate may be above, never far below."""
    import gc
    import json
    import tracemalloc

    shapes = {
        "rows": {"rows": [{"a": j, "b": 1.5} for j in range(20_000)]},
        "numbers": {"x": [j * 1000 for j in range(50_000)]},
        "floats": {"x": [j / 7 for j in range(50_000)]},
        "words": {"x": [f"w{j}" for j in range(50_000)]},
        "lists": {"x": [[j, j + 1000] for j in range(20_000)]},
        "text": {"x": "y" * 1_000_000},
    }
    for name, value in shapes.items():
        body = json.dumps(value)
        gc.collect()
        tracemalloc.start()
        parsed = json.loads(body)
        held, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        size = estimate(parsed, 10**9)
        assert 0.8 * held <= size <= 1.6 * held, (name, held, size, len(body))


def test_arguments_are_cut_once_when_the_call_ends_on_the_thread_that_ends_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Calls are added on the server's thread: it must not spend its time cutting arguments
    (the request holds them whole while the call runs anyway)."""
    import threading

    from mcp_notebook.protocol import calls

    cuts: list[tuple[str, int]] = []

    def counted(value: object, budget: int) -> object:
        cuts.append((threading.current_thread().name, budget))
        return abbreviate(value, budget)

    monkeypatch.setattr(calls, "abbreviate", counted)
    log = CallLog()
    big = {"n": "x" * (3 * MIB)}
    record = log.add(CallRecord("tools/call", "tool", big, "client"))
    assert cuts == [] and record.arguments is big
    record.set_status("running")
    done = threading.Thread(target=record.finish, args=("done",), name="kernel")
    done.start()
    done.join()
    assert cuts == [("kernel", log.max_call_bytes)]
    assert record.abbreviated == {"arguments"}
    cuts.clear()
    rejected = log.add(CallRecord("tools/call", "tool", big, "client"))
    rejected.finish("error", error=ValueError("n is not an integer"))
    assert cuts == [(threading.current_thread().name, REJECTED_BYTES)]  # once, and small


def test_a_huge_error_message_of_a_call_that_ran_is_cut_and_its_frames_kept() -> None:
    log = CallLog()
    try:
        raise ValueError("m" * (4 * MIB))
    except ValueError as exc:
        error = exc
    record = ran(log, {}, status="error", error=error)
    assert "error" in record.abbreviated
    assert isinstance(record.error, ValueError) and is_cut(str(record.error))
    assert len(str(record.error)) <= log.max_call_bytes
    assert record.error.__traceback__ is error.__traceback__  # %mcp debug still works
    assert len(record.traceback) <= log.max_call_bytes
    assert log.bytes <= 3 * log.max_call_bytes


def test_dropping_old_frames_leaves_the_users_exception_objects_alone() -> None:
    log = CallLog()
    shared = RuntimeError("the same object, raised by every call")  # as at module level
    records = []
    for _ in range(DEBUGGABLE + 3):
        try:
            raise shared
        except RuntimeError as exc:
            records.append(ran(log, {}, status="error", error=exc))
    assert shared.__traceback__ is not None  # the user's object is untouched
    assert [r.error.__traceback__ is None for r in records[:3]] == [True] * 3
    assert all(str(r.error) == str(shared) for r in records)


def test_the_monitor_shows_a_bounded_copy_of_a_running_calls_big_arguments() -> None:
    """A running call keeps its arguments whole (they are cut when it ends): the monitor's
    row and detail show an abbreviated copy, not megabytes of JSON."""
    from mcp_notebook.ui import calltable, render

    record = CallLog().add(CallRecord("tools/call", "tool", {"n": "x" * (4 * MIB)}, "client"))
    record.set_status("running")
    assert len(record.arguments["n"]) == 4 * MIB
    assert len(render.detail(record)) < 2 * MIB
    row = calltable.table(calltable.rows([record], calltable.Filters())[0], None, False)
    assert "xxxx" in row and len(row) < 64 * 1024
