"""Who made a request, as the transport verified it: an OAuth access token's holder.

Sans-IO and small: the transport's resource server (mcp_notebook/auth/) builds a
:class:`Caller` from a verified token and hands it to ``Server.handle``; the request
carries it (``RequestContext.caller``), the call record keeps it (``CallRecord.caller``)
and a tool sees it as ``ctx.caller``. The token itself is never kept here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


def key_of(caller: Caller | None) -> str | None:
    """The owner a 2026-07-28 task gets: its creator's key with OAuth on, else None (any
    holder of the server's one token, and of the task id, may use it)."""
    return caller.key if caller is not None else None


@dataclass(frozen=True, slots=True)
class Caller:
    """The verified holder of an access token."""

    subject: str | None  # ``sub``: the user (or the client itself, for client credentials)
    client_id: str | None  # ``client_id`` (RFC 9068) or ``azp`` (OpenID Connect)
    scopes: frozenset[str]
    issuer: str | None
    expires: int | None  # ``exp``, seconds since the epoch

    @property
    def who(self) -> str:
        """A short line for the monitor and the panel: "alice (client app-1)"."""
        name = self.subject or "?"
        return f"{name} (client {self.client_id})" if self.client_id else name

    @property
    def key(self) -> str:
        """Who it is, as one string: what a 2026-07-28 task it created is bound to."""
        # JSON, not words joined by spaces: a subject "a b" of client "c" is not
        # subject "a" of client "b c".
        return "oauth " + json.dumps([self.issuer, self.subject, self.client_id])

    def lacks(self, needed: frozenset[str]) -> frozenset[str]:
        """The scopes of ``needed`` this caller's token was not granted."""
        return needed - self.scopes
