"""2026-07-28 requests, passed through: no handshake, no session, one POST each.

A client on stdio sends each request with its protocol version in ``_meta`` (the official
SDK's ``mode="auto"`` starts with ``server/discover``). The bridge POSTs it without a
session, with the headers an HTTP client would add (``headers.py``), and relays the
response stream message by message; ``subscriptions/listen`` is such a stream that stays
open. On stdio a client cancels with ``notifications/cancelled``; over HTTP, closing the
response is the cancellation, so the bridge closes that request's connection.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..protocol.codes import HEADER_MISMATCH
from ..protocol.names import REQUEST_META_KEYS
from ..protocol.versions import modern_version
from .headers import ToolHeaders, request_headers
from .link import Abort, LinkDown, LinkLost, Message, read_reply
from .upstream import ACCEPT, Unreachable, Upstream, encode

logger = logging.getLogger(__name__)

MAX_PAGES = 100
REMEMBER_FINISHED = 1024  # ids of answered requests, to recognise a late cancellation


class ModernRelay:
    def __init__(self, upstream: Upstream, write: Callable[[Message], None]) -> None:
        self.upstream, self.write = upstream, write
        self.tools = ToolHeaders()
        self._flights: dict[str, Abort] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.used = False  # the client sent a 2026-07-28 request
        self._listens: weakref.WeakSet[Abort] = weakref.WeakSet()  # open until cancelled

    # -- entry points: admit and cancel on the stdin thread, handle on a worker ----------
    def admit(self, message: Message) -> Abort:
        """Register a request as it arrives, so that a cancellation right behind it finds it."""
        abort = Abort()
        with self._lock:
            self.used = True
            self._flights[_key(message["id"])] = abort
            if message.get("method") == "subscriptions/listen":
                self._listens.add(abort)
        return abort

    def handle(self, message: Message, abort: Abort) -> None:
        key = _key(message["id"])
        try:
            reply = self._answer(message, abort)
        finally:
            with self._lock:
                if self._flights.get(key) is abort:
                    del self._flights[key]
                self._finished[key] = None
                while len(self._finished) > REMEMBER_FINISHED:
                    self._finished.popitem(last=False)
        if reply is not None and not abort.cancelled:
            self.write(reply)

    def cancel(self, request_id: Any) -> bool:
        """Abort a request in flight. True for any 2026-07-28 request of ours, even one
        already answered (a late cancellation has nothing left to do); False otherwise."""
        key = _key(request_id)
        with self._lock:
            abort = self._flights.get(key)
            known = abort is not None or key in self._finished
        if abort is not None:
            abort.cancel()
        return known

    def end_listens(self) -> None:
        """Close the listen streams: they never end by themselves (stdin closed)."""
        with self._lock:
            listens = list(self._listens)
        for abort in listens:
            abort.cancel()

    def close(self) -> None:
        """Close every open response (subscriptions end with the client)."""
        with self._lock:
            flights = list(self._flights.values())
        for abort in flights:
            abort.cancel()

    # -- one request -------------------------------------------------------------------
    def _answer(self, message: Message, abort: Abort) -> Message | None:
        method = message["method"]
        retry = method == "tools/call"
        while True:
            headers = self._headers(message, abort)
            reply = self._exchange(message, headers, abort, self._forwarder(abort))
            if retry and _error_code(reply) == HEADER_MISMATCH:
                # The tool's annotations may have changed since we learnt them: the spec's
                # remedy is to list the tools again and retry once.
                self.tools.forget()
                retry = False
                continue
            result = reply.get("result") if reply is not None else None
            if method == "tools/list" and isinstance(result, dict) and "tools" in result:
                result["tools"] = self.tools.learn(result["tools"])
            return reply

    def _forwarder(self, abort: Abort) -> Callable[[Message], None]:
        def forward(message: Message) -> None:
            if abort.cancelled:
                return  # nothing more may reach the client about a cancelled request
            if message.get("method") == "notifications/tools/list_changed":
                self.tools.forget()
            if "method" in message and "id" in message:
                # 2026-07-28 servers ask through results (MRTR), never on a stream.
                logger.warning("dropped a server request on a 2026 stream: %s", message["method"])
                return
            self.write(message)

        return forward

    def _headers(self, message: Message, abort: Abort) -> dict[str, str]:
        version = modern_version(message) or ""
        params = given if isinstance(given := message.get("params"), dict) else {}
        annotated = None
        name = params.get("name")
        if message["method"] == "tools/call" and isinstance(name, str):
            annotated = self.tools.get(name)
            if annotated is None and not self.tools.complete:
                self._learn_tools(params.get("_meta") or {}, version, abort)
                annotated = self.tools.get(name)
        return request_headers(message, version, annotated)

    def _learn_tools(self, meta: dict[str, Any], version: str, abort: Abort) -> None:
        """List every tool (with the caller's ``_meta``) to learn their annotations."""
        generation = self.tools.begin()
        params: dict[str, Any] = {"_meta": {k: meta[k] for k in REQUEST_META_KEYS if k in meta}}
        for _ in range(MAX_PAGES):
            listing = {
                "jsonrpc": "2.0",
                "id": f"mcp-notebook-bridge-tools-{next(self._ids)}",
                "method": "tools/list",
                "params": params,
            }
            headers = request_headers(listing, version)
            reply = self._exchange(listing, headers, abort, lambda message: None)
            result = reply.get("result") if reply is not None else None
            if not isinstance(result, dict):
                return  # the call itself will meet the same problem and report it
            self.tools.learn(result.get("tools"))
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                self.tools.finish(generation)
                return
            params = {**params, "cursor": cursor}

    def _exchange(
        self,
        message: Message,
        headers: dict[str, str],
        abort: Abort,
        forward: Callable[[Message], None],
    ) -> Message | None:
        """POST one request without a session; its reply, the bridge's error, or None
        when the client cancelled it."""
        upstream, request_id = self.upstream, message["id"]
        for attempt in (1, 2):
            try:
                link = upstream.link()
                body, sent = encode(message), link.headers(None, ACCEPT, headers)
                reply = link.request("POST", body, sent, abort)
                answer = read_reply(reply, request_id, forward)
                if answer is None and not abort.cancelled:
                    return upstream.error(
                        request_id, f"the server answered HTTP {reply.status} without a reply"
                    )
                return None if abort.cancelled else answer
            except Unreachable as exc:
                return upstream.error(request_id, str(exc))
            except LinkDown:
                upstream.drop_link()
                if attempt == 1:
                    continue  # rediscover: the server may be back elsewhere
                return upstream.unreachable(request_id)
            except LinkLost:
                if abort.cancelled:
                    return None
                upstream.drop_link()
                return upstream.error(request_id, upstream.broken())
            except ValueError as exc:  # a header http.client refuses, or a body not JSON
                return upstream.error(request_id, f"mcp-notebook bridge: {exc}")
        raise AssertionError("unreachable")


def _key(request_id: Any) -> str:
    return json.dumps(request_id)  # 1 and "1" are different requests


def _error_code(reply: Message | None) -> Any:
    error = reply.get("error") if reply is not None else None
    return error.get("code") if isinstance(error, dict) else None
