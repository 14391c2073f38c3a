"""One request, from the transport's hands to its one reply.

Every MCP method handler receives a :class:`RequestContext`: the request (id, method,
params), the session it belongs to (the era, the client's info and capabilities; for a
2026-07-28 request, a session of this request alone), the back-channel to the client
(:meth:`RequestContext.notify`, :meth:`RequestContext.ask`, related to this request so they
travel on its stream), cancellation, and the reply channel.

The reply is handed over exactly once, with :meth:`RequestContext.reply`, from whichever
thread finished the request. The transport's :class:`ReplyChannel` decides how it leaves:
an HTTP POST's JSON answer is written straight to the client's socket from the kernel
thread that ran the tool (``transports/direct.py``), which saves the client a thread
wake-up (DESIGN.md §3); everything else is returned by ``Server.handle`` and written by
the transport on its own thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
from typing import TYPE_CHECKING, Any, Protocol

from .caller import Caller
from .jsonrpc import Message
from .kinds import Era
from .names import META_PROGRESS_SENT
from .progress import ProgressLine
from .session import Session

if TYPE_CHECKING:
    from .calls import CallRecord

# The methods whose reply may leave from the kernel thread (when the function takes no
# Context: nothing else is said on the request's stream); a transport need not offer a
# channel to others.
ANSWERED_EARLY = frozenset({"tools/call", "resources/read", "prompts/get"})
# Methods that run user code, the only ones with anything to stream before their reply
# (progress, logs, elicitations) and the ones a client may cancel.
RUN_USER_CODE = frozenset({"tools/call", "resources/read", "prompts/get", "completion/complete"})

# reply() may run on the kernel thread while cancel() runs on the server's: one lock for
# all requests is enough (it is held for a few instructions) and costs no allocation.
_deciding = threading.Lock()


class ReplyChannel(Protocol):
    """How a transport lets a reply leave from the thread that finished it."""

    def arm(self) -> bool:
        """On the server's loop, before user code runs: may the reply be sent from
        another thread? True commits the transport to take it from :meth:`send`."""
        ...

    def send(self, reply: Message) -> bool:
        """From any thread, once armed: deliver ``reply`` now. False if it could not."""
        ...


class RequestContext:
    """What a handler knows of the request it answers, and how it answers."""

    __slots__ = (
        "_armed",
        "_channel",
        "_over",
        "_progress",
        "by_client",
        "caller",
        "cancelled",
        "id",
        "method",
        "params",
        "record",
        "session",
        "task",
        "via",
    )

    def __init__(
        self, session: Session, channel: ReplyChannel | None = None, caller: Caller | None = None
    ) -> None:
        self.session = session
        self.caller = caller  # the verified token holder, with OAuth on (.caller)
        self.id: Any = None  # set with method and params once the message is a request
        self.method = ""
        self.params: dict[str, Any] = {}
        self.task: asyncio.Future[Any] | None = None  # set while it may be cancelled
        self.cancelled = False
        self.by_client = False  # cancelled by the client: no reply is due at all
        self.via: str | None = None  # the dispatcher tool that passed this call on
        self.record: CallRecord | None = None  # the call it runs, once there is one
        self._channel = channel
        self._armed = False  # the reply leaves through the channel, from any thread
        self._over = False  # replied, or cancelled: nothing more may leave
        self._progress: ProgressLine | None = None

    # -- about the request -------------------------------------------------------------
    @property
    def era(self) -> Era:
        return self.session.era

    @property
    def client_info(self) -> dict[str, Any]:
        return self.session.client_info

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.session.client_capabilities

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.params.get("_meta")
        return meta if isinstance(meta, dict) else {}

    @property
    def progress_token(self) -> Any:
        return self.meta.get("progressToken")

    @property
    def progress_line(self) -> ProgressLine:
        """What its progress token's notifications said so far (server's loop only)."""
        if self._progress is None:
            sent = self.meta.get(META_PROGRESS_SENT)
            known: float | None = None
            if isinstance(sent, (int, float)) and not isinstance(sent, bool):
                with contextlib.suppress(OverflowError):  # an int past float's range
                    known = float(sent) if math.isfinite(sent) else None
            self._progress = ProgressLine(known)
        return self._progress

    # -- the back-channel (on the server's loop) ---------------------------------------
    def notify(self, method: str, params: dict[str, Any] | None = None) -> bool:
        """A notification about this request, on its stream when it has one."""
        return self.session.notify(method, params, self.id)

    async def ask(
        self, method: str, params: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        """A request to the client about this request, and the client's result."""
        return await self.session.request(method, params, self.id, timeout)

    # -- the one reply -------------------------------------------------------------------
    def offer_channel(self) -> bool:
        """On the server's loop, before user code runs: will :meth:`reply` deliver from
        whichever thread calls it? Only when the transport's channel agrees."""
        channel = self._channel
        if channel is None or self.method not in ANSWERED_EARLY or not channel.arm():
            return False
        self._armed = True
        return True

    @property
    def armed(self) -> bool:
        return self._armed

    def reply(self, message: Message) -> bool:
        """Hand over the reply; any thread. The first one counts: later ones, and any
        after the client cancelled, are dropped. True if it went to the transport's
        channel; otherwise the transport takes it from ``Server.handle``."""
        with _deciding:
            if self._over:
                return False
            self._over = True
        return self._armed and self._channel is not None and self._channel.send(message)

    def cancel(self, by_client: bool = False) -> None:
        """No reply may leave from now on, and the task serving the request is cancelled.
        ``by_client``: the client cancelled it, so it gets no reply at all; otherwise (its
        session ended) the cancellation reaches the transport."""
        with _deciding:
            self._over = self.cancelled = True
            self.by_client = by_client
        if self.task is not None and not self.task.done():
            self.task.cancel()

    def drop(self) -> bool:
        """Its client hung up and nothing can receive its reply: if its call has not
        started, it never will (its record says so). False if it started already (the
        handshake-era spec lets such a call run on)."""
        if self.record is None or not self.record.drop():
            return False
        self.cancel(by_client=True)  # no reply is due: nobody would read it
        return True

    @property
    def over(self) -> bool:
        return self._over
