"""What a request handler needs of the HTTP transport that serves it.

The handlers (handler.py, streamed.py) are given their transport by http.py, which
imports them to build its routes. They name it by this protocol, not by ``HttpTransport``,
so the imports go one way (http -> handler -> endpoint) and transports/ has no cycle.
"""

from __future__ import annotations

from typing import Any, Protocol

import tornado.iostream

from ..protocol import Server, Session
from .direct import DirectReply
from .limits import Refusal
from .policy import Settings
from .security import Guard
from .settings import Limits
from .sse import SseStream


class Endpoint(Protocol):
    """The state and the session/stream bookkeeping of one endpoint (``HttpTransport``)."""

    server: Server
    guard: Guard
    settings: Settings  # what the endpoint policy needs (policy.py)
    limits: Limits
    max_body: int
    streams: dict[str, dict[str, SseStream]]  # per session: its streams by key
    lent: set[DirectReply]  # connections lent to calls answered from the kernel thread

    @property
    def sessions(self) -> dict[str, Session]: ...

    def find(self, session_id: str) -> Session | None: ...

    def refuse_session(self, client: str) -> Refusal | None: ...

    def new_session(self, session: Session, client: str = "") -> None: ...

    def end_session(self, session_id: str) -> None: ...

    def touch(self, session_id: str) -> None: ...

    def open_request_stream(self, session: Session, request_id: Any) -> SseStream: ...

    def close_request_stream(
        self, session: Session, request_id: Any, stream: SseStream
    ) -> None: ...

    def get_stream(self, session: Session) -> SseStream: ...

    def reattach(self, stream: tornado.iostream.IOStream, address: Any) -> None: ...
