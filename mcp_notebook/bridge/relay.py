"""The stdio <-> Streamable HTTP bridge to a notebook's server.

One thread reads the client's messages from stdin; requests run on a pool so a slow tool
does not hold up the others; a second thread keeps the session's GET stream open so
server->client notifications (``list_changed``...) and requests reach the client. When the
notebook's server goes away and comes back (a kernel restart), the bridge finds it again,
replays the client's ``initialize`` and tells the client to refresh its lists.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any, BinaryIO

from .. import discovery
from .link import Link, LinkDown, LinkLost, Reply

logger = logging.getLogger(__name__)

BRIDGE_ERROR = -32000  # implementation-defined server error (JSON-RPC reserves -32000..-32099)
REFRESH = ("tools", "resources", "prompts")


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


class Unreachable(Exception):
    pass


class Bridge:
    def __init__(self, target: Target, output: BinaryIO) -> None:
        self.target = target
        self._output = output
        self._write_lock = threading.Lock()
        self._state = threading.RLock()
        self._calls: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self._idle_workers = 0
        self._workers_lock = threading.Lock()
        self._link: Link | None = None
        self.session_id: str | None = None
        self._initialize: dict[str, Any] | None = None
        self._initialized = False
        self._generation = 0
        self._stopping = threading.Event()
        self._stream_thread: threading.Thread | None = None

    # -- output ------------------------------------------------------------------------
    def write(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        with self._write_lock:
            self._output.write(line)
            self._output.flush()

    def _error(self, request_id: Any, message: str, code: int = BRIDGE_ERROR) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if code == BRIDGE_ERROR:
            error["data"] = {"server": self.target.describe()}
        self.write({"jsonrpc": "2.0", "id": request_id, "error": error})

    # -- input -------------------------------------------------------------------------
    def run(self, stdin: BinaryIO) -> None:
        """Relay until stdin closes."""
        try:
            for raw in stdin:
                if raw.strip():
                    self.feed(raw)
        finally:
            self.close()

    def feed(self, raw: bytes) -> None:
        try:
            message = json.loads(raw)
        except ValueError as exc:
            self._error(None, f"Parse error: {exc}", code=-32700)
            return
        if not isinstance(message, dict):
            self._error(None, "Invalid Request: batches are not supported", code=-32600)
            return
        method = message.get("method")
        if method == "initialize" and "id" in message:
            self._initialize = message
            self._initialized = False
            self._submit_request(message, establish=True)
        elif "id" in message and method is not None:
            self._dispatch(message)
        else:
            # Notifications and responses go in order, on this thread.
            if method == "notifications/initialized":
                self._initialized = True
            self._send_other(message)
            if method == "notifications/initialized":
                self._ensure_stream()

    # -- requests ----------------------------------------------------------------------
    def _dispatch(self, message: dict[str, Any]) -> None:
        """Hand a request to an idle worker, starting one if all are busy with slow calls.

        Workers are daemon threads so that a call still running when stdin closes does
        not keep the bridge alive.
        """
        with self._workers_lock:
            if self._idle_workers == 0:
                self._idle_workers += 1
                threading.Thread(target=self._work, name="bridge-call", daemon=True).start()
            self._idle_workers -= 1
        self._calls.put(message)

    def _work(self) -> None:
        while True:
            message = self._calls.get()
            try:
                self._submit_request(message)
            except Exception:
                logger.exception("bridge worker failed")
                self._error(message.get("id"), "mcp-notebook bridge: internal error")
            finally:
                with self._workers_lock:
                    self._idle_workers += 1

    def _submit_request(self, message: dict[str, Any], establish: bool = False) -> None:
        request_id = message["id"]
        for attempt in (1, 2):
            try:
                link, session_id = self._connection(establish)
                reply = link.request("POST", _encode(message), link.headers(session_id, _ACCEPT))
                if establish:
                    self._adopt_session(reply)
                if reply.status == 404 and session_id and attempt == 1:
                    self._discard(reply)
                    self._lost(session_id)  # the server forgot us (restart): re-initialize
                    continue
                self._relay(reply, request_id)
                return
            except Unreachable as exc:
                return self._error(request_id, str(exc))
            except LinkDown:
                self._drop_link()
                if attempt == 1:
                    continue  # rediscover: the server may be back elsewhere
                return self._error(
                    request_id, f"mcp-notebook bridge: {self.target.describe()} is not reachable"
                )
            except LinkLost:
                self._drop_link()
                return self._error(
                    request_id,
                    f"mcp-notebook bridge: the connection to {self.target.describe()} broke "
                    "during this request (kernel restarted?); the bridge reconnects, retry",
                )

    def _send_other(self, message: dict[str, Any]) -> None:
        try:
            link, session_id = self._connection(False)
            reply = link.request("POST", _encode(message), link.headers(session_id, _ACCEPT))
            if reply.status >= 400:
                logger.warning(
                    "the server refused a %s: HTTP %s", message.get("method"), reply.status
                )
            self._discard(reply)
        except (Unreachable, LinkDown, LinkLost) as exc:
            logger.warning("could not deliver %s: %s", message.get("method", "a response"), exc)

    def _relay(self, reply: Reply, request_id: Any) -> None:
        delivered = False
        for message in reply.messages:
            if message.get("id") is None and "error" in message:
                message["id"] = request_id  # errors raised before the server read the id
            delivered = delivered or message.get("id") == request_id
            self.write(message)
        if not delivered and reply.status != 202:
            self._error(request_id, f"the server answered HTTP {reply.status} without a reply")

    @staticmethod
    def _discard(reply: Reply) -> None:
        for _ in reply.messages:
            pass

    # -- session -----------------------------------------------------------------------
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

    def _adopt_session(self, reply: Reply) -> None:
        session_id = reply.headers.get("Mcp-Session-Id")
        if session_id:
            with self._state:
                self.session_id = session_id
                self._generation += 1

    def _reinitialize(self, link: Link) -> None:
        """Replay the client's handshake on a new server (called with the state lock held)."""
        assert self._initialize is not None
        replay = {**self._initialize, "id": f"mcp-notebook-bridge-{self._generation + 1}"}
        reply = link.request("POST", _encode(replay), link.headers(None, _ACCEPT))
        self._discard(reply)
        session_id = reply.headers.get("Mcp-Session-Id")
        if reply.status != 200 or not session_id:
            raise LinkDown(f"re-initialize failed with HTTP {reply.status}")
        self.session_id = session_id
        self._generation += 1
        if self._initialized:
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            self._discard(link.request("POST", _encode(note), link.headers(session_id, _ACCEPT)))
        logger.info("re-established the session with %s", self.target.describe())
        for kind in REFRESH:
            self.write({"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"})

    def _lost(self, session_id: str) -> None:
        with self._state:
            if self.session_id == session_id:
                self._drop_link()

    def _drop_link(self) -> None:
        with self._state:
            link, self._link = self._link, None
        if link is not None:
            link.close()

    # -- the GET stream ----------------------------------------------------------------
    def _ensure_stream(self) -> None:
        if self._stream_thread is None:
            self._stream_thread = threading.Thread(
                target=self._stream_loop, name="bridge-stream", daemon=True
            )
            self._stream_thread.start()

    def _stream_loop(self) -> None:
        delay = 0.1
        while not self._stopping.is_set():
            try:
                link, session_id = self._connection(False)
                reply = link.request("GET", None, link.headers(session_id, "text/event-stream"))
                if reply.status == 405:
                    logger.info("the server offers no GET stream")
                    return
                if reply.status == 404 and session_id:
                    self._discard(reply)
                    self._lost(session_id)
                    continue
                if reply.status == 200:
                    delay = 0.1
                    for message in reply.messages:
                        self.write(message)
                else:
                    self._discard(reply)
            except (Unreachable, LinkDown, LinkLost) as exc:
                logger.debug("GET stream: %s", exc)
                self._drop_link()
            # The stream ended: the server went away or restarted. Look for it again.
            self._stopping.wait(delay)
            delay = min(delay * 2, 1.0)

    def close(self) -> None:
        self._stopping.set()
        with self._state:
            link, session_id = self._link, self.session_id
        if link is not None and session_id:
            with contextlib.suppress(LinkDown, LinkLost):
                self._discard(link.request("DELETE", None, link.headers(session_id, _ACCEPT)))
        self._drop_link()


_ACCEPT = "application/json, text/event-stream"


def _encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
