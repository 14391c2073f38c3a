"""Opaque access tokens, asked about at the issuer's RFC 7662 introspection endpoint.

The server authenticates itself with HTTP Basic (its client id and secret). An active
token must still be this resource's (``aud``: an answer naming none is refused), the issuer's
(``iss``, likewise) and unexpired. At most :data:`MAX_PENDING` introspections wait at a
time: a flood of made-up tokens gets 503 instead of a queue that delays everyone.
"""

from __future__ import annotations

import base64
import concurrent.futures
import threading
import time
from typing import Any
from urllib.parse import quote, urlencode

from ..errors import McpNotebookError
from ..protocol.caller import Caller
from .config import AuthConfig
from .fetching import FetchError, awaited, fetch_json, submit
from .tokens import TokenRefused, caller_of

MAX_PENDING = 16


class IntrospectionUnavailable(McpNotebookError, RuntimeError):
    """The introspection endpoint could not answer (503)."""


class Introspector:
    def __init__(self, config: AuthConfig) -> None:
        assert config.introspection_url and config.client_id and config.client_secret
        self.config = config
        self.url = config.introspection_url
        pair = f"{quote(config.client_id, safe='')}:{quote(config.client_secret, safe='')}"
        self._authorization = "Basic " + base64.b64encode(pair.encode()).decode()
        self.asked = 0  # introspection requests sent (what the tests count)
        self._pending = 0
        self._lock = threading.Lock()

    async def caller(self, token: str) -> Caller:
        """The holder of an active token of this resource; TokenRefused if it is not."""
        with self._lock:
            if self._pending >= MAX_PENDING:
                raise IntrospectionUnavailable("too many token checks are waiting")
            self._pending += 1
            self.asked += 1
        body = urlencode({"token": token, "token_type_hint": "access_token"}).encode()
        headers = {
            "Authorization": self._authorization,
            "Content-Type": "application/x-www-form-urlencoded",
        }
        options: dict[str, Any] = {
            "timeout": self.config.fetch_timeout,
            "limit": self.config.fetch_limit,
        }
        future = submit(fetch_json, self.url, body=body, headers=headers, **options)
        # Pending until the fetch is over, not until its waiter gives up: an abandoned one
        # still holds a fetch thread, and one not started yet is dropped (cancel) rather
        # than left queued for the next real token to wait behind.
        future.add_done_callback(self._done)
        try:
            answer = await awaited(future, self.config.fetch_timeout)
        except FetchError as exc:
            future.cancel()
            raise IntrospectionUnavailable(str(exc)) from None
        return self._judge(answer)

    def _done(self, _future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._pending -= 1

    def _judge(self, answer: dict[str, Any]) -> Caller:
        if answer.get("active") is not True:
            raise TokenRefused("token is not active")
        # An answer naming no audience cannot show the token is this server's: the
        # issuer's tokens for its other resources are active too (MCP: MUST validate).
        audience = answer.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if not any(isinstance(a, str) and a in self.config.audiences for a in audiences):
            raise TokenRefused("token audience is not this resource")
        issuer = answer.get("iss")
        if issuer is not None and issuer != self.config.issuer:
            raise TokenRefused("wrong issuer")
        expires = answer.get("exp")
        if isinstance(expires, (int, float)) and expires <= time.time() - self.config.leeway:
            raise TokenRefused("token expired")
        return caller_of(answer)
