"""The bridge's standard (handshake-era) session with the notebook's HTTP endpoint.

:meth:`Upstream.request` exchanges one request and returns its reply; everything else the
server sends (on a request's SSE stream, or on the session's GET stream, which opens after
``notifications/initialized``) goes to ``deliver``. When the server goes away and comes back
(a kernel restart), the next use finds it again, replays the ``initialize`` that opened the
session (and ``initialized``), and calls ``reconnected`` so the client can refresh.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import discovery
from ..errors import McpNotebookError
from ..protocol import jsonrpc
from ..protocol.codes import SERVER_ERROR
from ..protocol.jsonrpc import RpcError
from ..protocol.names import SESSION_HEADER, VERSION_HEADER
from ..threads import start_thread
from ..wire import jsontext
from .link import Link, LinkDown, LinkLost, Message, read_reply

logger = logging.getLogger(__name__)

BRIDGE_ERROR = SERVER_ERROR  # the bridge got no answer from the notebook
ACCEPT = "application/json, text/event-stream"


@dataclass
class Target:
    """Where the bridge connects: a fixed URL, or a name looked up in the discovery files."""

    name: str | None = None
    url: str | None = None
    token: str | None = None

    def describe(self) -> str:
        return self.url or (f"notebook server {self.name!r}" if self.name else "a notebook server")

    def resolve(self) -> tuple[str, str | None]:
        if self.url:
            return self.url, self.token
        record = discovery.find(self.name)
        return record.url, self.token or record.token


class Unreachable(McpNotebookError):
    pass


encode = jsontext.dumps


def discard(messages: Any) -> None:
    for _ in messages:
        pass


class Upstream:
    def __init__(
        self,
        target: Target,
        deliver: Callable[[Message], None],
        reconnected: Callable[[], None],
    ) -> None:
        self.target = target
        self.deliver, self.reconnected = deliver, reconnected
        self._state = threading.RLock()
        self._link: Link | None = None
        self.session_id: str | None = None
        self._initialize: Message | None = None
        self._initialized = False
        self.protocol_version: str | None = None  # negotiated by the client's initialize
        self._generation = 0
        self._stopping = threading.Event()
        self._stream_thread: threading.Thread | None = None

    def error(self, request_id: Any, message: str) -> Message:
        """The bridge's own error reply: the notebook could not answer."""
        data = {"server": self.target.describe()}
        return jsonrpc.error_response(request_id, RpcError(BRIDGE_ERROR, message, data))

    def unreachable(self, request_id: Any) -> Message:
        return self.error(
            request_id, f"mcp-notebook bridge: {self.target.describe()} is not reachable"
        )

    # -- requests ----------------------------------------------------------------------
    def request(
        self, message: Message, forward: Callable[[Message], None] | None = None
    ) -> Message | None:
        """Exchange one request; its reply (or the bridge's error), None if none is due.

        Other messages on the reply's stream go to ``forward`` (default: ``deliver``), in
        order, before the reply is returned. ``initialize`` opens a new session.
        """
        request_id = message["id"]
        try:
            body = encode(message)
        except ValueError as exc:  # 1e400 decodes to inf, which JSON cannot carry; or too deep
            return self.error(request_id, f"mcp-notebook bridge: cannot relay this request: {exc}")
        establish = message.get("method") == "initialize"
        if establish:
            with self._state:
                self._initialize, self._initialized = message, False
        forward = forward or self.deliver
        for attempt in (1, 2):
            try:
                link, session_id = self._connection(establish)
                reply = link.request("POST", body, self._headers(link, session_id))
                if establish:
                    self._adopt_session(reply.headers.get(SESSION_HEADER))
                if reply.status == 404 and session_id and attempt == 1:
                    discard(reply.messages)
                    self._lost(session_id)  # the server forgot us (restart): re-initialize
                    continue
                answer = read_reply(reply, request_id, forward)
                result = answer.get("result") if answer is not None else None
                if establish and isinstance(result, dict):
                    # Later requests name the negotiated version (2025-06-18 and after).
                    version = result.get("protocolVersion")
                    self.protocol_version = version if isinstance(version, str) else None
                if answer is None:  # even a 202: a request is owed a reply
                    return self.error(
                        request_id, f"the server answered HTTP {reply.status} without a reply"
                    )
                return answer
            except Unreachable as exc:
                return self.error(request_id, str(exc))
            except ValueError as exc:
                return self.error(request_id, f"the server sent a malformed reply: {exc}")
            except LinkDown:
                self.drop_link()
                if attempt == 1:
                    continue  # rediscover: the server may be back elsewhere
                return self.unreachable(request_id)
            except LinkLost:
                self.drop_link()
                return self.error(request_id, self.broken())
        raise AssertionError("unreachable")

    def broken(self) -> str:
        return (
            f"mcp-notebook bridge: the connection to {self.target.describe()} broke "
            "during this request (kernel restarted?); the bridge reconnects, retry"
        )

    def send(self, message: Message) -> None:
        """POST a notification or a response; ``initialized`` opens the GET stream."""
        opens_stream = message.get("method") == "notifications/initialized"
        if opens_stream:
            self._initialized = True
        try:
            link, session_id = self._connection(False)
            reply = link.request("POST", encode(message), self._headers(link, session_id))
            if reply.status >= 400:
                logger.warning(
                    "the server refused a %s: HTTP %s", message.get("method"), reply.status
                )
            discard(reply.messages)
        except (Unreachable, LinkDown, LinkLost, ValueError) as exc:
            logger.warning("could not deliver %s: %s", message.get("method", "a response"), exc)
        if opens_stream:
            self._ensure_stream()

    # -- the connection and the session ------------------------------------------------
    def link(self) -> Link:
        """The link, without a session (2026-07-28 requests need none)."""
        return self._connection(True)[0]

    def _connection(self, establish: bool) -> tuple[Link, str | None]:
        with self._state:
            if self._link is None:
                try:
                    url, token = self.target.resolve()
                except discovery.NotFound as exc:
                    raise Unreachable(f"mcp-notebook bridge: {exc}") from None
                link = Link(url, token)
                if not establish and self._initialize is not None:
                    self._reinitialize(link)
                self._link = link
            return self._link, None if establish else self.session_id

    def _headers(self, link: Link, session_id: str | None, accept: str = ACCEPT) -> dict[str, str]:
        version = self.protocol_version if session_id else None
        return link.headers(session_id, accept, {VERSION_HEADER: version} if version else None)

    def _adopt_session(self, session_id: str | None) -> None:
        if session_id:
            with self._state:
                self.session_id = session_id
                self._generation += 1

    def _reinitialize(self, link: Link) -> None:
        """Replay the handshake on a new server (called with the state lock held)."""
        assert self._initialize is not None
        replay = {**self._initialize, "id": f"mcp-notebook-bridge-{self._generation + 1}"}
        reply = link.request("POST", encode(replay), link.headers(None, ACCEPT))
        discard(reply.messages)
        session_id = reply.headers.get(SESSION_HEADER)
        if reply.status != 200 or not session_id:
            raise LinkDown(f"re-initialize failed with HTTP {reply.status}")
        self.session_id = session_id
        self._generation += 1
        if self._initialized:
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            discard(link.request("POST", encode(note), self._headers(link, session_id)).messages)
        logger.info("re-established the session with %s", self.target.describe())
        self.reconnected()

    def _lost(self, session_id: str) -> None:
        with self._state:
            if self.session_id == session_id:
                self.drop_link()

    def drop_link(self) -> None:
        with self._state:
            link, self._link = self._link, None
        if link is not None:
            link.close()

    # -- the GET stream ----------------------------------------------------------------
    def _ensure_stream(self) -> None:
        with self._state:
            if self._stream_thread is None:
                self._stream_thread = start_thread(self._stream_loop, name="bridge-stream")

    def _stream_loop(self) -> None:
        delay = 0.1
        while not self._stopping.is_set():
            try:
                link, session_id = self._connection(False)
                reply = link.request(
                    "GET", None, self._headers(link, session_id, "text/event-stream")
                )
                if reply.status == 405:
                    logger.info("the server offers no GET stream")
                    return
                if reply.status == 404 and session_id:
                    discard(reply.messages)
                    self._lost(session_id)
                    continue
                if reply.status == 200:
                    delay = 0.1
                    for message in reply.messages:
                        self.deliver(message)
                else:
                    discard(reply.messages)
            except (Unreachable, LinkDown, LinkLost, ValueError) as exc:
                logger.debug("GET stream: %s", exc)
                self.drop_link()
            # The stream ended: the server went away or restarted. Look for it again.
            self._stopping.wait(delay)
            delay = min(delay * 2, 1.0)

    def close(self) -> None:
        """End the session (DELETE) and stop the GET stream."""
        self._stopping.set()
        with self._state:
            link, session_id = self._link, self.session_id
        if link is not None and session_id:
            with contextlib.suppress(LinkDown, LinkLost):
                discard(link.request("DELETE", None, self._headers(link, session_id)).messages)
        self.drop_link()
