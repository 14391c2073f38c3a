"""Answering a call from the thread where its user code ran.

A call into user code crosses to the kernel's thread and back (DESIGN.md §3). Waking the
server's thread again only to write the answer costs a thread wake-up on the client's
critical path, so a transport that can write from any thread offers an :class:`EarlyReply`:
the server arms it just before it hands the work over, and sends the response from the
kernel thread as soon as the work ends. The response still comes back to the transport as
usual; it then only has to tidy up.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Protocol

from .jsonrpc import Message


class EarlyReply(Protocol):
    def arm(self) -> bool:
        """On the server's loop, before user code runs: may the response go out early?

        True commits the transport to take the response from :meth:`send`, or from the
        usual reply if nothing was sent.
        """
        ...

    def send(self, reply: Message) -> bool:
        """From any thread: deliver ``reply`` now. False if a reply was already delivered."""
        ...


# The methods whose reply may leave early: a transport need not offer it to others.
ANSWERED_EARLY = frozenset({"tools/call"})
# Methods that run user code, the only ones with anything to stream before their reply
# (progress, logs, elicitations): others need no response stream.
RUN_USER_CODE = frozenset({"tools/call", "resources/read", "prompts/get", "completion/complete"})

# The early reply offered for the request being handled (set by Server.handle).
offered: ContextVar[EarlyReply | None] = ContextVar("early_reply", default=None)
