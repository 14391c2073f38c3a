"""`mcp-notebook bridge` stopped by its client: SIGTERM (Ctrl+Break on Windows) ends the
session with the notebook, and a second one does not wait for that.

Against a scripted HTTP endpoint (no kernel); with a real notebook, and a call in flight,
in tests/kernel/test_bridge.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp.client.stdio import FORCE_KILL_TIMEOUT

from tests import portable
from tests.stdio import INITIALIZE, FakeNotebook, RawStdio, Seen, json_body
from tests.waiting import wait_until

SESSION = "s-1"


def answer(seen: Seen) -> tuple[Any, ...]:
    body = seen.body if isinstance(seen.body, dict) else {}
    if "id" not in body:
        return 202, "application/json", b""
    reply = json_body({"jsonrpc": "2.0", "id": body["id"], "result": {}})
    return 200, "application/json", reply, {"Mcp-Session-Id": SESSION}


@pytest.fixture
def notebook() -> Iterator[FakeNotebook]:
    fake = FakeNotebook(answer)
    try:
        yield fake
    finally:
        fake.answer_deletes.set()
        fake.close()


def test_a_second_sigterm_ends_the_bridge_without_waiting_for_the_session_to_end(notebook):
    """Ending the session is a courtesy to the notebook: a client (or a person pressing
    Ctrl-C twice) that asks again does not wait for a notebook that does not answer."""
    notebook.answer_deletes.clear()
    raw = RawStdio("bridge", "--url", notebook.url, **portable.spawn_options())
    try:
        raw.send(INITIALIZE)
        raw.reply_to(1)
        portable.stop(raw.process)
        wait_until(lambda: notebook.deleted, "the bridge ending its session")
        assert notebook.deleted[0].headers["mcp-session-id"] == SESSION
        assert raw.process.poll() is None  # waiting for the notebook's answer
        portable.stop(raw.process)
        code = raw.process.wait(FORCE_KILL_TIMEOUT)
    finally:
        if raw.process.poll() is None:
            raw.process.kill()
    assert code != 0  # ended by the signal (-15 on POSIX), not finished
