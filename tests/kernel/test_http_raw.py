"""The Streamable HTTP transport seen byte by byte, from a raw HTTP client, in a real kernel.

One kernel and one server (with a bearer token) serve the whole module. Every request opens
a fresh ``http.client`` connection, so a server that closes a connection after an error
cannot disturb the next test. Every JSON-RPC body the server sends is checked against the
official schema.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest

from tests.conftest import Served, start_server
from tests.kernels import Kernel
from tests.messages import PROTOCOL, initialize_message
from tests.schema import validate_notification, validate_reply
from tests.sources import ADD_INTS
from tests.waiting import read_until

ACCEPT_BOTH = "application/json, text/event-stream"
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = -32700, -32600, -32601
LIMIT = 4 * 1024 * 1024  # the default max body
DROP = object()  # as a header value: leave this default header out

SETUP = (
    """
import threading, time

"""
    + ADD_INTS
    + '''
@mcp.tool
def nap(seconds: float) -> str:
    """Sleep on the main thread, then report the notebook's `phase` global."""
    time.sleep(seconds)
    return str(globals().get("phase"))

@mcp.tool
def thread_name() -> str:
    """The name of the thread this tool runs on."""
    return threading.current_thread().name

@mcp.tool
def read_global(name: str) -> str:
    """repr() of a notebook global."""
    return repr(globals().get(name))
'''
)

REDEFINE_ADD = '''
@mcp.tool
def add(a: int, b: int) -> int:
    """Add two integers (redefined)."""
    return a + b
'''

BUSY_CELL = """
phase = "running"
print("started", flush=True)
time.sleep(3)
phase = "done"
"""


# -- a lean raw client -----------------------------------------------------------------
@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    @property
    def content_type(self) -> str:
        return (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()

    def json(self) -> Any:
        return json.loads(self.body)


class Endpoint:
    """The served MCP endpoint, spoken to with http.client."""

    def __init__(self, served: Served) -> None:
        self.kernel: Kernel = served.kernel
        self.url, self.token = served.url, served.token
        parts = urlsplit(served.url)
        self.host, self.port, self.path = parts.hostname, parts.port, parts.path
        self._ids = iter(range(1, 1_000_000))

    def next_id(self) -> int:
        return next(self._ids)

    def connect(self, timeout: float = 30) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def headers(
        self,
        *,
        session: str | None = None,
        accept: Any = ACCEPT_BOTH,
        content_type: Any = "application/json",
        auth: Any = None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, str]:
        headers: dict[str, Any] = {
            "Accept": accept,
            "Content-Type": content_type,
            "Authorization": auth if auth is not None else f"Bearer {self.token}",
        }
        if session is not None:
            headers["Mcp-Session-Id"] = session
        headers.update(extra or {})
        return {k: v for k, v in headers.items() if v is not DROP and v is not None}

    def request(
        self,
        method: str,
        body: bytes | Iterable[bytes] | None = None,
        *,
        path: str | None = None,
        **header_options: Any,
    ) -> Reply:
        """One request on a fresh connection; the whole response is read."""
        conn = self.connect()
        try:
            # The server may answer early (e.g. 413) and stop reading the body.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                headers = self.headers(**header_options)
                conn.request(method, path or self.path, body=body, headers=headers)
            response = conn.getresponse()
            return Reply(response.status, response.headers, response.read())
        finally:
            conn.close()

    def post(self, message: Any, **options: Any) -> Reply:
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        return self.request("POST", body, **options)

    def rpc(
        self, session: str, method: str, params: dict[str, Any] | None = None, **options: Any
    ) -> dict[str, Any]:
        """A request inside ``session`` answered with 200 JSON; the validated reply."""
        request_id = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        reply = self.post(message, session=session, **options)
        assert reply.status == 200, (reply.status, reply.body)
        assert reply.content_type == "application/json", reply.headers
        body = reply.json()
        assert body["id"] == request_id
        return validate_reply(method, body)

    def call_tool(self, session: str, tool: str, /, **arguments: Any) -> dict[str, Any]:
        reply = self.rpc(session, "tools/call", {"name": tool, "arguments": arguments})
        assert "result" in reply, reply
        assert reply["result"]["isError"] is False, reply
        return reply["result"]

    def initialize(self, **options: Any) -> Reply:
        return self.post(initialize_message(self.next_id()), **options)

    def open_session(self) -> str:
        """initialize + notifications/initialized; the new session id."""
        reply = self.initialize()
        assert reply.status == 200, (reply.status, reply.body)
        session = reply.headers["Mcp-Session-Id"]
        assert session
        done = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session=session)
        assert (done.status, done.body) == (202, b"")
        return session


def ping_message(request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


def expect_error(
    reply: Reply,
    status: int,
    code: int,
    *words: str,
    request_id: Any = None,
    method: str = "ping",
) -> dict[str, Any]:
    """Assert an HTTP error carrying a JSON-RPC error body; return the body.

    A message rejected before its id is known gets an error with no ``id`` member: the
    transport spec says so, and the schema's RequestId (string | integer) has no null.
    """
    assert reply.status == status, (reply.status, reply.body)
    assert reply.content_type == "application/json", reply.headers
    body = reply.json()
    assert body["error"]["code"] == code, body
    message = body["error"]["message"].lower()
    for word in words:
        assert word.lower() in message, (word, body)
    if request_id is None:
        assert "id" not in body, body
    else:
        assert body["id"] == request_id, body
    try:
        validate_reply(method, body)
    except jsonschema.ValidationError as exc:
        pytest.fail(f"HTTP {status}: not a valid JSONRPCErrorResponse: {exc.message}; {body}")
    return body


def sse_events(data: bytes) -> list[dict[str, str]]:
    """Parse a complete text/event-stream body into events ({field: value})."""
    events = []
    for block in data.decode().replace("\r\n", "\n").split("\n\n"):
        event: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            event[name] = event[name] + "\n" + value if name in event else value
        if event:
            events.append(event)
    return events


def next_sse_event(response: http.client.HTTPResponse) -> dict[str, str]:
    """Read one message event from an open SSE response (blocks up to the socket timeout).

    Priming events (an id with empty data, sent so the client can resume) are skipped.
    """
    lines: list[bytes] = []
    while True:
        line = response.readline()
        if not line:
            raise AssertionError(f"the SSE stream ended; partial event: {lines}")
        if line.strip() == b"":
            if lines:
                event = sse_events(b"".join(lines) + b"\n")[0]
                lines = []
                if event.get("data"):
                    return event
            continue
        lines.append(line)


def assert_healthy(ep: Endpoint) -> None:
    """The kernel survived: it is alive, runs a cell and still serves a tool call."""
    assert ep.kernel.alive()
    _, output = ep.kernel.run("print(1 + 1)")
    assert output.strip() == "2"
    result = ep.call_tool(ep.open_session(), "add", a=2, b=3)
    assert result["content"][0]["text"] == "5"


def wait_for_output(kernel: Kernel, msg_id: str, text: str, timeout: float = 30) -> None:
    """Block until the cell ``msg_id`` printed ``text`` (so it is running now)."""
    read_until(
        lambda seconds: kernel.client.get_iopub_msg(timeout=seconds),
        lambda message: (
            message["parent_header"].get("msg_id") == msg_id
            and message["msg_type"] == "stream"
            and text in message["content"]["text"]
        ),
        f"the cell to print {text!r}",
        timeout,
    )


# -- fixtures --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ep(kernel: Kernel) -> Endpoint:
    served = start_server(kernel, SETUP)
    assert served.token
    return Endpoint(served)


@pytest.fixture
def session(ep: Endpoint) -> str:
    return ep.open_session()


# -- POST: the happy paths ---------------------------------------------------------------
def test_initialize_gives_json_and_a_session_id(ep: Endpoint) -> None:
    reply = ep.initialize()
    assert reply.status == 200
    assert reply.content_type == "application/json"
    session = reply.headers["Mcp-Session-Id"]
    assert session and all(0x21 <= ord(c) <= 0x7E for c in session)
    body = validate_reply("initialize", reply.json())
    assert body["result"]["protocolVersion"] == PROTOCOL

    notified = ep.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session=session)
    assert (notified.status, notified.body) == (202, b"")
    assert ep.rpc(session, "ping")["result"] == {}


def test_client_response_message_is_accepted(ep: Endpoint, session: str) -> None:
    reply = ep.post({"jsonrpc": "2.0", "id": "srv-1", "result": {}}, session=session)
    assert (reply.status, reply.body) == (202, b"")
    reply = ep.post(
        {"jsonrpc": "2.0", "id": "srv-2", "error": {"code": -1, "message": "no"}},
        session=session,
    )
    assert (reply.status, reply.body) == (202, b"")


def test_accept_event_stream_only_gets_one_sse_event(ep: Endpoint, session: str) -> None:
    reply = ep.post(ping_message(7), session=session, accept="text/event-stream")
    assert reply.status == 200
    assert reply.content_type == "text/event-stream"
    events = [e for e in sse_events(reply.body) if e.get("data")]
    assert len(events) == 1, reply.body
    assert validate_reply("ping", json.loads(events[0]["data"])) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {},
    }


def test_accept_without_json_or_event_stream_is_406(ep: Endpoint, session: str) -> None:
    expect_error(
        ep.post(ping_message(), session=session, accept="text/html"),
        406,
        INVALID_REQUEST,
        "not acceptable",
        request_id=1,  # the body was readable: its error names it
    )
    assert_healthy(ep)


# -- POST: bad bodies ------------------------------------------------------------------
def test_malformed_json_is_400_parse_error(ep: Endpoint, session: str) -> None:
    expect_error(ep.post(b'{"jsonrpc": "2.0", "id": 1,', session=session), 400, PARSE_ERROR)
    expect_error(ep.post(b"\xff\xfe not utf-8", session=session), 400, PARSE_ERROR)
    assert_healthy(ep)


@pytest.mark.parametrize(
    "body",
    [
        [],
        [{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
        {"foo": 1},
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": 42},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1, 2]},
        "ping",
    ],
    ids=[
        "empty-batch",
        "batch",
        "no-jsonrpc",
        "jsonrpc-1.0",
        "null-id",
        "int-method",
        "list-params",
        "string",
    ],
)
def test_not_a_jsonrpc_message_is_400_invalid_request(
    ep: Endpoint, session: str, body: Any
) -> None:
    # A readable id (a string or an integer) is named in the error; others are left out.
    readable = body.get("id") if isinstance(body, dict) else None
    reply = ep.post(body, session=session)
    expect_error(reply, 400, INVALID_REQUEST, "invalid request", request_id=readable)
    assert_healthy(ep)


def test_wrong_content_type_is_415(ep: Endpoint, session: str) -> None:
    reply = ep.post(ping_message(), session=session, content_type="text/plain")
    expect_error(reply, 415, INVALID_REQUEST, "unsupported media type", request_id=1)
    reply = ep.post(ping_message(), session=session, content_type=DROP)
    expect_error(reply, 415, INVALID_REQUEST, "unsupported media type", request_id=1)
    # parameters are fine
    reply = ep.post(ping_message(), session=session, content_type="application/json; charset=utf-8")
    assert reply.status == 200
    validate_reply("ping", reply.json())
    assert_healthy(ep)


# -- sessions and protocol versions ----------------------------------------------------
def test_missing_session_id_is_400(ep: Endpoint) -> None:
    expect_error(ep.post(ping_message(3)), 400, INVALID_REQUEST, "mcp-session-id", request_id=3)
    expect_error(ep.request("DELETE"), 400, INVALID_REQUEST, "mcp-session-id")
    assert_healthy(ep)


def test_unknown_session_id_is_404(ep: Endpoint) -> None:
    reply = ep.post(ping_message(4), session="no-such-session")
    expect_error(reply, 404, INVALID_REQUEST, "session not found", request_id=4)
    reply = ep.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session="nope")
    expect_error(reply, 404, INVALID_REQUEST, "session not found")
    assert_healthy(ep)


def test_unsupported_protocol_version_header_is_400(ep: Endpoint, session: str) -> None:
    reply = ep.post(ping_message(5), session=session, extra={"MCP-Protocol-Version": "1999-01-01"})
    body = expect_error(reply, 400, INVALID_REQUEST, "1999-01-01", request_id=5)
    assert "mcp-protocol-version" in body["error"]["message"].lower()
    assert_healthy(ep)


def test_supported_protocol_version_header_is_200(ep: Endpoint, session: str) -> None:
    for version in (PROTOCOL, "2025-06-18", "2025-03-26"):
        reply = ep.rpc(session, "ping", extra={"MCP-Protocol-Version": version})
        assert reply["result"] == {}


def test_server_discover_without_session_or_meta_is_a_prompt_error(ep: Endpoint) -> None:
    """A probe that is neither a handshake-era request nor a valid 2026 one: -32602, at once."""
    reply = ep.post(
        {"jsonrpc": "2.0", "id": 9, "method": "server/discover", "params": {}},
        extra={"MCP-Protocol-Version": "2026-07-28"},
    )
    body = expect_error(reply, 400, -32602, "_meta", request_id=9)
    assert body["error"]["code"] not in (-32020, -32021, -32022)
    assert_healthy(ep)


def test_unknown_method_in_a_session_is_200_method_not_found(ep: Endpoint, session: str) -> None:
    reply = ep.rpc(session, "no/such/method")
    assert reply["error"]["code"] == METHOD_NOT_FOUND
    assert "no/such/method" in reply["error"]["message"]


# -- authentication --------------------------------------------------------------------
def test_missing_token_is_401_with_www_authenticate(ep: Endpoint) -> None:
    reply = ep.initialize(auth=DROP)
    expect_error(reply, 401, INVALID_REQUEST, "unauthorized", method="initialize")
    assert reply.headers["WWW-Authenticate"].lower().startswith("bearer")
    assert "Mcp-Session-Id" not in reply.headers
    assert_healthy(ep)


@pytest.mark.parametrize("auth", ["Bearer wrong-token", "Basic dXNlcjpwYXNz", "Bearer"])
def test_wrong_token_is_401(ep: Endpoint, auth: str) -> None:
    reply = ep.initialize(auth=auth)
    expect_error(reply, 401, INVALID_REQUEST, "unauthorized", method="initialize")
    assert reply.headers["WWW-Authenticate"].lower().startswith("bearer")
    assert_healthy(ep)


def test_no_auth_server_needs_no_token(ep: Endpoint) -> None:
    """Restart on the same port without auth, then restore the token."""
    ep.kernel.run(f"%mcp start --port {ep.port} --no-auth")
    try:
        assert ep.kernel.eval("mcp.token") is None
        reply = ep.initialize(auth=DROP)
        assert reply.status == 200, reply.body
        assert "WWW-Authenticate" not in reply.headers
        validate_reply("initialize", reply.json())
        session = reply.headers["Mcp-Session-Id"]
        assert ep.rpc(session, "ping", auth=DROP)["result"] == {}
    finally:
        # "=": a random token may start with "-", which argparse would read as an option.
        ep.kernel.run(f"%mcp start --port {ep.port} --token={ep.token}")
    assert ep.kernel.eval("mcp.url") == ep.url
    expect_error(ep.initialize(auth=DROP), 401, INVALID_REQUEST, "unauthorized")
    assert_healthy(ep)


# -- Origin and Host (DNS rebinding) ---------------------------------------------------
def test_foreign_origin_is_403(ep: Endpoint) -> None:
    reply = ep.initialize(extra={"Origin": "http://evil.example"})
    expect_error(reply, 403, INVALID_REQUEST, "forbidden", "origin", method="initialize")
    assert "Mcp-Session-Id" not in reply.headers
    assert_healthy(ep)


@pytest.mark.parametrize(
    "origin", ["http://localhost:1234", "http://127.0.0.1:8888", "https://localhost"]
)
def test_loopback_origin_is_allowed(ep: Endpoint, origin: str) -> None:
    reply = ep.initialize(extra={"Origin": origin})
    assert reply.status == 200, reply.body
    validate_reply("initialize", reply.json())


def test_foreign_host_is_403(ep: Endpoint) -> None:
    reply = ep.initialize(extra={"Host": "evil.example"})
    expect_error(reply, 403, INVALID_REQUEST, "forbidden", "host", method="initialize")
    reply = ep.initialize(extra={"Host": f"evil.example:{ep.port}"})
    expect_error(reply, 403, INVALID_REQUEST, "forbidden", "host", method="initialize")
    assert_healthy(ep)


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}", "localhost"])
def test_loopback_host_is_allowed(ep: Endpoint, host: str) -> None:
    reply = ep.initialize(extra={"Host": host.format(port=ep.port)})
    assert reply.status == 200, reply.body
    validate_reply("initialize", reply.json())


# -- body size -------------------------------------------------------------------------
def big_ping(size: int) -> bytes:
    """A valid ping message of ``size`` bytes (the padding hides in params)."""
    head, tail = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"', b'"}}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


def chunks(data: bytes, size: int = 256 * 1024) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def test_body_over_the_limit_is_413_with_content_length(ep: Endpoint, session: str) -> None:
    reply = ep.post(big_ping(LIMIT + 1024), session=session)
    expect_error(reply, 413, INVALID_REQUEST, "too large", str(LIMIT))
    assert_healthy(ep)


def test_oversized_content_length_is_refused_before_the_body(ep: Endpoint, session: str) -> None:
    """The declared size alone earns the 413: the server does not wait for 4 MiB."""
    conn = ep.connect(timeout=10)
    try:
        conn.putrequest("POST", ep.path)
        for name, value in ep.headers(session=session).items():
            conn.putheader(name, value)
        conn.putheader("Content-Length", str(LIMIT + 1))
        conn.endheaders(b'{"jsonrpc":"2.0",')  # a start of the body, then nothing more
        response = conn.getresponse()
        reply = Reply(response.status, response.headers, response.read())
    finally:
        conn.close()
    expect_error(reply, 413, INVALID_REQUEST, "too large")
    assert_healthy(ep)


def test_body_over_the_limit_is_413_when_chunked(ep: Endpoint, session: str) -> None:
    # An iterable body without Content-Length: http.client sends it chunked.
    reply = ep.request("POST", chunks(big_ping(LIMIT + 1024)), session=session)
    expect_error(reply, 413, INVALID_REQUEST, "too large", str(LIMIT))
    assert_healthy(ep)


def test_body_under_the_limit_is_served(ep: Endpoint, session: str) -> None:
    reply = ep.request("POST", chunks(big_ping(LIMIT - 1024)), session=session)
    assert reply.status == 200, reply.body[:300]
    assert validate_reply("ping", reply.json())["result"] == {}


def test_body_at_the_limit_with_content_length_is_served(ep: Endpoint, session: str) -> None:
    body = big_ping(LIMIT)
    assert len(body) == LIMIT
    reply = ep.post(body, session=session)
    assert reply.status == 200, reply.body[:300]
    assert validate_reply("ping", reply.json())["result"] == {}


# -- GET stream, DELETE, other methods and paths ---------------------------------------
def test_get_without_event_stream_accept_is_406(ep: Endpoint, session: str) -> None:
    expect_error(
        ep.request("GET", session=session, accept="application/json"),
        406,
        INVALID_REQUEST,
        "text/event-stream",
    )
    assert_healthy(ep)


def test_get_stream_delivers_list_changed_then_delete_ends_the_session(
    ep: Endpoint, session: str
) -> None:
    conn = ep.connect(timeout=20)
    try:
        conn.request(
            "GET", ep.path, headers=ep.headers(session=session, accept="text/event-stream")
        )
        stream = conn.getresponse()
        assert stream.status == 200
        assert stream.headers["Content-Type"].split(";")[0] == "text/event-stream"

        # One GET stream per session.
        second = ep.request("GET", session=session, accept="text/event-stream")
        expect_error(second, 409, INVALID_REQUEST, "conflict")

        # Redefining a tool in a cell notifies the open stream.
        ep.kernel.run(REDEFINE_ADD)
        event = next_sse_event(stream)
        notification = validate_notification(json.loads(event["data"]))
        assert notification["method"] == "notifications/tools/list_changed"
        assert not stream.isclosed()

        deleted = ep.request("DELETE", session=session)
        assert deleted.status == 200, deleted.body
        assert stream.read() == b""  # DELETE ended the stream: EOF, no more events
    finally:
        conn.close()

    expect_error(ep.post(ping_message(11), session=session), 404, INVALID_REQUEST, request_id=11)
    gone = ep.request("GET", session=session, accept="text/event-stream")
    expect_error(gone, 404, INVALID_REQUEST)
    expect_error(ep.request("DELETE", session=session), 404, INVALID_REQUEST)
    assert_healthy(ep)


def test_delete_of_unknown_session_is_404(ep: Endpoint) -> None:
    expect_error(ep.request("DELETE", session="never-existed"), 404, INVALID_REQUEST, "session")
    assert_healthy(ep)


def test_unsupported_http_method_is_405(ep: Endpoint, session: str) -> None:
    reply = ep.request("PUT", json.dumps(ping_message()).encode(), session=session)
    expect_error(reply, 405, INVALID_REQUEST, "method not allowed")
    assert_healthy(ep)


def test_unknown_path_is_404(ep: Endpoint, session: str) -> None:
    reply = ep.post(ping_message(), session=session, path="/other")
    expect_error(reply, 404, INVALID_REQUEST, "not found")
    reply = ep.request("GET", session=session, path=ep.path + "/x", accept="text/event-stream")
    expect_error(reply, 404, INVALID_REQUEST, "not found")
    assert_healthy(ep)


# -- threads: control plane off the main thread, user code on it -----------------------
def test_control_plane_answers_while_a_cell_runs(ep: Endpoint, session: str) -> None:
    client = ep.kernel.client
    msg_id = client.execute(BUSY_CELL)
    wait_for_output(ep.kernel, msg_id, "started")  # the cell now holds the main thread

    order: list[str] = []
    call_replies: queue.Queue[dict[str, Any]] = queue.Queue()

    def call_during_cell() -> None:
        result = ep.call_tool(session, "nap", seconds=0.2)
        order.append("tools/call")
        call_replies.put(result)

    caller = threading.Thread(target=call_during_cell, daemon=True)
    caller.start()

    # ping and tools/list come back while the cell still runs.
    assert ep.rpc(session, "ping")["result"] == {}
    listed = ep.rpc(session, "tools/list")["result"]["tools"]
    assert {"add", "nap", "thread_name", "read_global"} <= {t["name"] for t in listed}
    assert not client.shell_channel.msg_ready(), "the cell ended before ping/tools/list"
    order.append("control plane")
    assert caller.is_alive(), "tools/call finished while the cell held the main thread"

    reply = client.get_shell_msg(timeout=30)
    order.append("cell")
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["status"] == "ok"

    result = call_replies.get(timeout=30)
    caller.join(5)
    assert order == ["control plane", "cell", "tools/call"]
    # The tool ran after the cell finished, on the same thread, seeing its final state.
    assert result["content"][0]["text"] == "done"
    assert_healthy(ep)


def test_tools_run_on_the_main_thread(ep: Endpoint, session: str) -> None:
    result = ep.call_tool(session, "thread_name")
    assert result["content"][0]["text"] == "MainThread"


def test_tools_read_notebook_globals(ep: Endpoint, session: str) -> None:
    ep.kernel.run("secret_value = 'set by a cell'")
    result = ep.call_tool(session, "read_global", name="secret_value")
    assert result["content"][0]["text"] == repr("set by a cell")
    result = ep.call_tool(session, "add", a=40, b=2)
    assert result["content"][0]["text"] == "42"
