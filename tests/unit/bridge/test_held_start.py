"""The bridge of `serve --transport stdio` while the notebook starts (bridge/held.py).

In process, against a scripted endpoint whose handshake is the real protocol core's (no
kernel): the handshake is answered at once with what the notebook's server would say;
the rest waits, in order, and reaches the notebook after the replayed handshake; held
requests hear progress, can be cancelled, and get one error each if the start fails.
The same through a real `serve` process: tests/e2e/serve/test_stdio_start.py.
"""

from __future__ import annotations

import asyncio
import io
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcp_notebook import __version__
from mcp_notebook.bridge import Bridge, held
from mcp_notebook.bridge.startup import LateTarget, Startup, Step
from mcp_notebook.protocol import Server, Session, modern
from mcp_notebook.protocol.lifecycle import Identity
from mcp_notebook.registry import Registry
from tests.stdio import INITIALIZE, FakeNotebook, Seen, json_body
from tests.waiting import wait_until

NAME = "nb"
SESSION = "s-1"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-modern", "version": "1"},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def request(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def kernel_answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """What the notebook's own server answers (the protocol core the kernel runs)."""
    server = Server(Registry(), name=NAME, version=__version__)
    session = modern.open_request(message) if modern.requested_version(message) else Session()
    return asyncio.run(server.handle(message, session))


def answer(seen: Seen) -> tuple[Any, ...]:
    body = seen.body if isinstance(seen.body, dict) else {}
    if "id" not in body:
        return 202, "application/json", b""
    if body.get("method") in ("initialize", "server/discover"):
        reply = kernel_answer(body)
    else:
        reply = {"jsonrpc": "2.0", "id": body["id"], "result": {"from": "the notebook"}}
    return 200, "application/json", json_body(reply), {"Mcp-Session-Id": SESSION}


class Output(io.RawIOBase):
    """The bridge's stdout, decoded line by line."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._pending = b""
        self._arrived = threading.Condition()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        with self._arrived:
            self._pending += bytes(data)
            *lines, self._pending = self._pending.split(b"\n")
            self.messages.extend(json.loads(line) for line in lines if line.strip())
            self._arrived.notify_all()
        return len(data)

    def wait_for(self, found: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        with self._arrived:
            if not self._arrived.wait_for(lambda: any(map(found, self.messages)), 30):
                raise AssertionError(f"never came: {what}; got {self.messages}")
            return next(m for m in self.messages if found(m))

    def replies_to(self, request_id: Any) -> list[dict[str, Any]]:
        with self._arrived:
            return [m for m in self.messages if "method" not in m and m.get("id") == request_id]

    def only_reply(self, request_id: Any) -> dict[str, Any]:
        self.wait_for(lambda m: "method" not in m and m.get("id") == request_id, f"{request_id}")
        [reply] = self.replies_to(request_id)
        return reply

    def notifications(self, method: str) -> list[dict[str, Any]]:
        with self._arrived:
            return [m for m in self.messages if m.get("method") == method and "id" not in m]


@pytest.fixture
def notebook() -> Iterator[FakeNotebook]:
    fake = FakeNotebook(answer)
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture
def starting() -> Iterator[tuple[Bridge, Startup, Output]]:
    """A bridge in front of a notebook that is starting (not serving yet)."""
    startup = Startup(NAME, Identity(NAME, __version__))
    startup.advance(Step(0, 4, "starting the kernel"))
    output = Output()
    bridge = Bridge(LateTarget(startup), output, eof_grace=5, startup=startup)
    yield bridge, startup, output
    startup.fail("the test is over")
    bridge.close()


def posted(notebook: FakeNotebook) -> list[str | None]:
    return [seen.method or "(a response)" for seen in notebook.seen]


# -- the handshake, at once -------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25", "1999-01-01"])
def test_initialize_is_answered_before_the_notebook_serves_as_its_server_would(
    starting, notebook, version
):
    bridge, startup, output = starting
    message = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": version}}
    bridge.feed(message)
    assert output.only_reply(1) == kernel_answer(message)
    bridge.feed(request("p", "ping"))
    assert output.only_reply("p") == kernel_answer(request("p", "ping"))
    assert notebook.seen == []  # nothing reached the notebook: it is not up
    assert not startup.settled


def test_server_discover_is_answered_before_the_notebook_serves_as_its_server_would(
    starting, notebook
):
    bridge, _, output = starting
    discover = request("d", "server/discover", {"_meta": MODERN_META})
    bridge.feed(discover)
    assert output.only_reply("d") == kernel_answer(discover)
    assert notebook.seen == []


def test_the_session_opens_upstream_with_the_clients_handshake_then_what_waited_in_order(
    starting, notebook
):
    bridge, startup, output = starting
    bridge.feed(INITIALIZE)
    output.only_reply(1)
    bridge.feed(INITIALIZED)
    bridge.feed(request(2, "tools/list"))
    bridge.feed(request(3, "logging/setLevel", {"level": "debug"}))
    bridge.feed(request(4, "ping"))  # answered here: the session is ours until it is up
    assert output.only_reply(4)["result"] == {}
    assert output.replies_to(2) == [] and notebook.seen == []
    assert startup.ready(notebook.url, "t0k")
    assert output.only_reply(2)["result"] == {"from": "the notebook"}
    assert output.only_reply(3)["result"] == {"from": "the notebook"}
    assert posted(notebook)[:2] == ["initialize", "notifications/initialized"]
    assert sorted(posted(notebook)[2:]) == ["logging/setLevel", "tools/list"]
    replayed = notebook.seen[0]
    assert replayed.body == INITIALIZE  # the client's own, as it sent it
    assert notebook.seen[2].headers["mcp-session-id"] == SESSION
    assert notebook.seen[2].headers["authorization"] == "Bearer t0k"
    assert len(output.replies_to(1)) == 1  # the replayed handshake's reply is not the client's
    bridge.feed(request(5, "tools/list"))  # from now on, straight through
    assert output.only_reply(5)["result"] == {"from": "the notebook"}


def test_2026_requests_wait_and_go_to_the_notebook_without_a_session(starting, notebook):
    bridge, startup, output = starting
    bridge.feed(request("d", "server/discover", {"_meta": MODERN_META}))
    bridge.feed(request("t", "tools/list", {"_meta": MODERN_META}))
    output.only_reply("d")
    assert notebook.seen == []
    startup.ready(notebook.url, None)
    assert output.only_reply("t")["result"] == {"from": "the notebook"}
    [listing] = notebook.posted("tools/list")
    assert "mcp-session-id" not in listing.headers
    assert listing.headers["mcp-method"] == "tools/list"
    assert notebook.posted("initialize") == []


def test_a_notebook_that_may_set_instructions_answers_its_handshake_itself(notebook):
    startup = Startup(NAME, None)  # serve saw `instructions` in the notebook's code
    output = Output()
    bridge = Bridge(LateTarget(startup), output, startup=startup)
    try:
        bridge.feed(INITIALIZE)
        bridge.feed(request("p", "ping"))
        assert output.replies_to(1) == [] and output.replies_to("p") == []
        startup.ready(notebook.url, None)
        assert output.only_reply(1) == kernel_answer(INITIALIZE)
        assert output.only_reply("p")["result"] == {"from": "the notebook"}
        assert posted(notebook) == ["initialize", "ping"]
    finally:
        bridge.close()


# -- while it starts: progress, logs, cancellation ----------------------------------------------


def test_held_requests_hear_each_step_and_the_session_logs_it(starting, notebook):
    bridge, startup, output = starting
    bridge.feed(INITIALIZE)
    output.only_reply(1)
    bridge.feed(INITIALIZED)
    bridge.feed(request(2, "tools/list", {"_meta": {"progressToken": "p2"}}))
    bridge.feed(request(3, "prompts/list"))  # no token: no progress
    startup.advance(Step(1, 4, "cell 1 of 2: import time"))
    startup.advance(Step(2, 4, "cell 2 of 2: time.sleep(60)"))
    startup.advance(Step(3, 4, "starting the server"))
    startup.ready(notebook.url, None)
    output.only_reply(2)
    progress = [m["params"] for m in output.notifications("notifications/progress")]
    assert [p["progressToken"] for p in progress] == ["p2"] * 4
    assert [p["progress"] for p in progress] == [0, 1, 2, 3]  # increasing, one per step
    assert all(p["total"] == 4 for p in progress)
    assert progress[2]["message"] == "nb: cell 2 of 2: time.sleep(60)"
    logs = [m["params"] for m in output.notifications("notifications/message")]
    assert [log["data"] for log in logs] == [
        "nb: starting the kernel",
        "nb: cell 1 of 2: import time",
        "nb: cell 2 of 2: time.sleep(60)",
        "nb: starting the server",
    ]
    assert {log["level"] for log in logs} == {"info"}


def test_a_client_that_asked_for_warnings_only_hears_no_start_up_log(starting, notebook):
    bridge, startup, output = starting
    bridge.feed(INITIALIZE)
    bridge.feed(request(2, "logging/setLevel", {"level": "warning"}))
    before = len(output.notifications("notifications/message"))
    startup.advance(Step(1, 4, "cell 1 of 2: import time"))
    startup.ready(notebook.url, None)
    output.only_reply(2)  # the level reached the notebook too
    assert len(output.notifications("notifications/message")) == before


def test_a_held_request_the_client_cancels_gets_no_reply_and_never_reaches_the_notebook(
    starting, notebook
):
    bridge, startup, output = starting
    bridge.feed(INITIALIZE)
    bridge.feed(request(2, "tools/call", {"name": "slow", "_meta": {"progressToken": 7}}))
    bridge.feed(request(3, "tools/list"))
    cancel = {"requestId": 2, "reason": "changed my mind"}
    bridge.feed({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
    startup.advance(Step(1, 4, "cell 1 of 2"))
    startup.ready(notebook.url, None)
    output.only_reply(3)
    assert output.replies_to(2) == []
    assert "tools/call" not in posted(notebook)
    assert "notifications/cancelled" not in posted(notebook)
    tokens = [m["params"]["progressToken"] for m in output.notifications("notifications/progress")]
    assert tokens == [7]  # the one before the cancel


def test_what_waits_is_bounded(notebook, monkeypatch):
    monkeypatch.setattr(held, "MAX_HELD", 2)
    startup = Startup(NAME, Identity(NAME, __version__))
    output = Output()
    bridge = Bridge(LateTarget(startup), output, startup=startup)
    try:
        for request_id in (1, 2, 3):
            bridge.feed(request(request_id, "tools/list"))
        refused = output.only_reply(3)
        assert refused["error"]["code"] == -32000 and "too many" in refused["error"]["message"]
        startup.ready(notebook.url, None)
        assert "result" in output.only_reply(1) and "result" in output.only_reply(2)
    finally:
        bridge.close()


def test_what_waits_is_bounded_in_bytes_too(notebook, monkeypatch):
    monkeypatch.setattr(held, "MAX_HELD_BYTES", 250_000)
    startup = Startup(NAME, Identity(NAME, __version__))
    output = Output()
    bridge = Bridge(LateTarget(startup), output, startup=startup)
    big = {"name": "add", "arguments": {"text": "x" * 100_000}}
    try:
        for request_id in (1, 2, 3):
            bridge.feed(request(request_id, "tools/call", big))
        refused = output.only_reply(3)
        assert refused["error"]["code"] == -32000 and "too many" in refused["error"]["message"]
        bridge.feed(request(4, "tools/list"))  # small enough for the room left
        startup.ready(notebook.url, None)
        for request_id in (1, 2, 4):
            assert "result" in output.only_reply(request_id)
    finally:
        bridge.close()


# -- a start that fails, or a client that leaves ------------------------------------------------


def test_when_the_notebook_fails_every_held_request_gets_one_error(starting, notebook):
    bridge, startup, output = starting
    bridge.feed(INITIALIZE)
    output.only_reply(1)
    bridge.feed(INITIALIZED)
    bridge.feed(request(2, "tools/list"))
    bridge.feed(request("m", "tools/list", {"_meta": MODERN_META}))
    reason = "mcp-notebook serve: nb.ipynb: cell 2 of 3 failed: ZeroDivisionError: division by zero"
    assert startup.fail(reason)
    for request_id in (2, "m"):
        error = output.only_reply(request_id)["error"]
        assert error["code"] == -32000 and error["message"] == reason
    bridge.feed(request(3, "prompts/list"))  # after the failure: the same answer at once
    assert output.only_reply(3)["error"]["message"] == reason
    assert notebook.seen == []
    assert not startup.ready(notebook.url, None)  # too late: nothing reaches it


def test_stdin_closing_while_the_notebook_starts_answers_what_waits(notebook):
    startup = Startup(NAME, Identity(NAME, __version__))
    output = Output()
    bridge = Bridge(LateTarget(startup), output, eof_grace=0.5, startup=startup)
    lines = [INITIALIZE, INITIALIZED, request(2, "tools/list")]
    stdin = io.BytesIO(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
    bridge.run(stdin)  # returns: the notebook never came up within the grace
    output.only_reply(1)
    error = output.only_reply(2)["error"]
    assert error["code"] == -32000 and "closed stdin" in error["message"]
    assert startup.failure is not None and notebook.seen == []


def test_stdin_closing_before_anything_was_asked_does_not_wait_for_the_notebook(notebook):
    startup = Startup(NAME, Identity(NAME, __version__))
    bridge = Bridge(LateTarget(startup), Output(), eof_grace=3600, startup=startup)
    bridge.run(io.BytesIO(b""))  # would take an hour if it waited
    assert startup.failure is not None


def test_the_seed_dialect_waits_for_the_notebook_and_hears_why_it_failed(notebook):
    startup = Startup(NAME, Identity(NAME, __version__))
    output = Output()
    bridge = Bridge(LateTarget(startup), output, startup=startup)
    try:
        seed_initialize = request(1, "initialize", {"clientCapabilities": {}})
        bridge.feed(seed_initialize)  # its reply says what is registered: it waits
        bridge.feed(request(2, "mcp/listTools"))
        assert output.replies_to(1) == []
        startup.fail("mcp-notebook serve: nb.ipynb: cell 1 of 1 failed: NameError: x")
        assert bridge.settle(30)
        for request_id in (1, 2):
            [reply] = output.replies_to(request_id)
            assert "error" in reply, reply
        assert "cell 1 of 1 failed" in json.dumps(output.replies_to(1))
        assert notebook.seen == []
    finally:
        bridge.close()


def test_the_seed_dialect_is_served_once_the_notebook_is_up(notebook):
    startup = Startup(NAME, Identity(NAME, __version__))
    output = Output()
    bridge = Bridge(LateTarget(startup), output, startup=startup)
    try:
        bridge.feed(request(1, "initialize", {"clientCapabilities": {}}))
        threading.Timer(0, startup.ready, (notebook.url, None)).start()
        wait_until(lambda: output.replies_to(1), "the dialect's initialize reply")
        assert bridge.settle(30)
        assert posted(notebook)[0] == "initialize"
    finally:
        bridge.close()


def test_settling_waits_for_what_was_held_to_be_relayed_once_the_notebook_is_up():
    """stdin closed while the notebook started, which then came up: the bridge settles
    (and ends) only once what waited was relayed and answered, though the replayed
    handshake is still on its way (else `serve` exits before those replies leave)."""
    gate = threading.Event()

    def slow_handshake(seen: Seen) -> tuple[Any, ...]:
        if seen.method == "initialize":
            gate.wait(30)
        return answer(seen)

    slow = FakeNotebook(slow_handshake)
    startup = Startup(NAME, Identity(NAME, __version__))
    output = Output()
    bridge = Bridge(LateTarget(startup), output, startup=startup)
    try:
        bridge.feed(INITIALIZE)
        bridge.feed(request(2, "tools/list"))
        opening = threading.Thread(target=startup.ready, args=(slow.url, None), daemon=True)
        opening.start()  # its replay of the handshake waits for the gate
        wait_until(lambda: slow.posted("initialize"), "the replayed handshake")
        assert not bridge.settle(0.2)  # tools/list has not even left yet
        gate.set()
        assert bridge.settle(30)
        assert "result" in output.only_reply(2)
        opening.join(30)
    finally:
        gate.set()
        bridge.close()
        slow.close()
