"""The call history (``mcp.calls``) cannot fill the notebook's memory.

Clients decide how big their arguments are, and tools may return big results: the history
keeps each call's values whole only up to a per-call size, keeps nothing but a short
abbreviated copy of a call rejected before it ran, and holds at most ``max_bytes`` in all.
Memory is read the way a person would see it, as the kernel process's resident size, once
the garbage collector ran and glibc gave back the free memory it keeps in per-thread arenas
(``malloc_trim``): freed request buffers stay there as a high-water mark (up to ~100 MB
after these 20 MB replies), which is not memory anything holds.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import start_server
from tests.kernel.test_http_raw import LIMIT, Endpoint
from tests.kernels import Kernel, KernelError

SETUP = '''
import ctypes, gc, psutil

@mcp.tool
def double(n: int) -> int:
    """Twice n."""
    return 2 * n

@mcp.tool
def blob(megabytes: int, seed: str) -> str:
    """A big text result (distinct each time: nothing is shared between calls)."""
    return seed * (megabytes * 1024 * 1024 // len(seed))

@mcp.tool
def count_rows(rows: list) -> int:
    """How many rows it got."""
    return len(rows)

@mcp.tool
def echo(text: str) -> int:
    """The length of what it got."""
    return len(text)

def rss_mb():
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the bound below is generous anyway
        pass
    return psutil.Process().memory_info().rss / (1024 * 1024)  # resident, on every OS
'''
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def ep(kernel: Kernel) -> Endpoint:
    return Endpoint(start_server(kernel, SETUP))


@pytest.fixture(scope="module")
def session(ep: Endpoint) -> str:
    return ep.open_session()


def tool_call(ep: Endpoint, session: str, name: str, arguments: dict) -> dict:
    message = {"jsonrpc": "2.0", "id": ep.next_id(), "method": "tools/call"}
    message["params"] = {"name": name, "arguments": arguments}
    reply = ep.post(json.dumps(message).encode(), session=session)
    assert reply.status == 200, (reply.status, reply.body[:300])
    return reply.json()["result"]


def rss_mb(kernel: Kernel) -> float:
    return kernel.eval("rss_mb()")


def test_big_rejected_calls_and_big_results_leave_memory_bounded(
    ep: Endpoint, session: str
) -> None:
    kernel = ep.kernel
    argument = "x" * (LIMIT - 4096)  # as big as one request may be
    # Warm up: the first call of each kind allocates what any call of it needs.
    for _ in range(2):
        assert tool_call(ep, session, "double", {"n": argument})["isError"] is True
        assert tool_call(ep, session, "blob", {"megabytes": 20, "seed": "warm"})["isError"] is False
    before = rss_mb(kernel)
    for n in range(100):  # rejected before running: invalid arguments
        result = tool_call(ep, session, "double", {"n": f"{n}{argument}"})
        assert result["isError"] is True
    for n in range(15):
        text = tool_call(ep, session, "blob", {"megabytes": 20, "seed": f"s{n:02}"})
        assert len(text["content"][0]["text"]) >= 20 * MIB - 8
    grown = rss_mb(kernel) - before
    print(f"kernel RSS grew by {grown:.1f} MB")
    assert grown < 100, f"the kernel grew by {grown:.0f} MB"
    held, limit = kernel.eval("(mcp.calls.bytes, mcp.calls.max_bytes)")
    assert held <= limit
    # What is kept says what it was: a rejected call keeps a short copy and its size.
    rejected = kernel.eval(
        "[(len(c.arguments['n']), c.arguments['n'][-40:], sorted(c.abbreviated), c.status,"
        " len(str(c.error))) for c in mcp.calls if c.target == 'double'][-1]"
    )
    assert rejected[0] <= 1024
    assert f"[cut: {LIMIT - 4096 + 2} characters]" in rejected[1]
    # The error message quotes a short part of the value (cut itself, if it were longer).
    assert rejected[2:] == (["arguments"], "error", rejected[4]) and rejected[4] <= 1024
    kept = kernel.eval(
        "[(len(c.result['content'][0]['text']), sorted(c.abbreviated)) "
        "for c in mcp.calls if c.target == 'blob'][-1]"
    )
    assert kept[0] <= kernel.eval("mcp.calls.max_call_bytes")
    assert kept[1] == ["result"]


def test_the_byte_limit_counts_the_memory_of_parsed_arguments(ep: Endpoint, session: str) -> None:
    """Parsed JSON takes far more memory than its text (rows of small objects: about 6
    times): the history counts the memory, so that it holds about ``max_bytes`` (here
    within 3 times that: the allocator keeps some memory of the parsed arguments whose
    first rows the history keeps; measured 36-42 MB. Counting the JSON text instead
    would keep about 35 calls, some 95 MB)."""
    kernel = ep.kernel
    rows = [{"a": j, "b": 1.5} for j in range(20_000)]  # 457 KiB of JSON
    kernel.run("%mcp history --max-mb 16")
    try:
        for _ in range(2):  # warm-up
            assert tool_call(ep, session, "count_rows", {"rows": rows})["isError"] is False
        kernel.run("mcp.calls.clear()")
        before = rss_mb(kernel)
        for _ in range(60):
            assert tool_call(ep, session, "count_rows", {"rows": rows})["isError"] is False
        grown = rss_mb(kernel) - before
        held, limit = kernel.eval("(mcp.calls.bytes, mcp.calls.max_bytes)")
        print(f"kernel RSS grew by {grown:.1f} MB for a history of {held / MIB:.1f} MiB")
        assert held <= limit == 16 * MIB
        assert grown < 3 * 16, f"the kernel grew by {grown:.0f} MB for a 16 MiB history"
    finally:
        kernel.run("%mcp history --max-mb 64")


def test_the_byte_limit_drops_the_oldest_calls(ep: Endpoint, session: str) -> None:
    kernel = ep.kernel
    kernel.run("%mcp history --max-mb 4 --call-kb 512")
    try:
        for n in range(12):
            result = tool_call(ep, session, "echo", {"text": str(n % 10) * 500_000})
            assert result["isError"] is False
        held, limit, count = kernel.eval("(mcp.calls.bytes, mcp.calls.max_bytes, len(mcp.calls))")
        assert held <= limit == 4 * MIB
        assert count < 12
        # The newest calls stay, the oldest went; each kept its whole 500 kB argument.
        last = kernel.eval("[len(c.arguments['text']) for c in mcp.calls][-3:]")
        assert last == [500_000] * 3
    finally:
        kernel.run("%mcp history --max-mb 64 --call-kb 1024")


def test_replaying_an_abbreviated_call_says_it_cannot(ep: Endpoint, session: str) -> None:
    kernel = ep.kernel
    assert tool_call(ep, session, "echo", {"text": "y" * (2 * MIB)})["isError"] is False
    kernel.run("call = [c for c in mcp.calls if c.target == 'echo'][-1]")
    assert kernel.eval("sorted(call.abbreviated)") == ["arguments"]
    with pytest.raises(KernelError) as failed:
        kernel.run("call.replay()")
    assert "cannot be replayed" in failed.value.evalue
    assert "abbreviated" in failed.value.evalue
    # A call whose arguments were kept whole replays as before.
    assert tool_call(ep, session, "echo", {"text": "short"})["isError"] is False
    kernel.run("call = [c for c in mcp.calls if c.target == 'echo'][-1]")
    assert kernel.eval("call.replay()") == 5


def test_history_magic_shows_use_and_limits_and_refuses_bad_values(ep: Endpoint) -> None:
    kernel = ep.kernel
    _, shown = kernel.run("%mcp history")
    assert "Call history (mcp.calls)" in shown
    assert "MiB of at most 64.0 MiB" in shown
    assert "1024 KiB" in shown
    for bad in (
        "--max-mb 0",
        "--max-mb -3",
        "--max-mb nan",
        "--max-mb inf",
        "--max-mb x",
        "--call-kb 0",
        "--max-calls 0",
        "--max-calls 1.5",
    ):
        with pytest.raises(KernelError) as failed:
            kernel.run(f"%mcp history {bad}")
        assert failed.value.ename == "UsageError", bad
        assert "%mcp" in failed.value.evalue
    assert kernel.eval("(mcp.calls.max_bytes, mcp.calls.max_call_bytes)") == (64 * MIB, MIB)
    _, shown = kernel.run("%mcp history --max-calls 500 --max-mb 8.5")
    assert "of at most 500 calls" in shown and "8.5 MiB" in shown
    kernel.run("%mcp history --max-calls 1000 --max-mb 64")


def test_the_monitor_header_shows_what_the_history_holds(ep: Endpoint) -> None:
    header = ep.kernel.eval("mcp.ui.monitor().header.value")
    assert "calls," in header and "MiB/64.0 MiB" in header
