"""The verdict on one request's ``Authorization`` header: whose token it is, or why not.

:meth:`ResourceServer.check` answers at once, without I/O, whenever it can (no token, a
malformed one, one checked before and still cached, a JWT whose key is held): the
endpoint policy asks it before a body is read. :meth:`ResourceServer.verify` is the
whole answer: it fetches the issuer's keys (or asks the introspection endpoint) when
``check`` could not decide.

Statuses: 401 (no token, or one that fails: ``invalid_token`` with the reason), 403
(``insufficient_scope``, naming what is needed), 503 with ``Retry-After`` (the server's
own trouble reaching its issuer; never a client's fault, never a 500).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from ..protocol.caller import Caller
from . import challenge as challenges
from .config import AuthConfig
from .introspection import IntrospectionUnavailable, Introspector
from .keys import KeyCache, KeysUnavailable
from .tokens import MAX_TOKEN, TokenRefused, header_of, verify

logger = logging.getLogger(__name__)

CACHED_TOKENS = 1024  # verified tokens remembered (by hash) until they expire
INTROSPECTED_FOR = 60  # seconds an introspection's "active" is trusted
LOG_EVERY = 30.0  # seconds between log lines of the same trouble reaching the issuer


@dataclass(frozen=True, slots=True)
class Verdict:
    """``status`` 200 with the ``caller``; or the refusal to send. 0: undecided (check)."""

    status: int
    caller: Caller | None = None
    message: str = ""
    challenge: str | None = None  # the WWW-Authenticate header's value
    retry_after: int | None = None


UNDECIDED = Verdict(0)


class ResourceServer:
    """One MCP endpoint's OAuth 2.1 resource server (its audience known)."""

    def __init__(self, config: AuthConfig) -> None:
        self.config = config
        self.keys = KeyCache(config)
        self.introspector = Introspector(config) if config.introspection_url else None
        self.required = frozenset(config.scopes)
        self.metadata = challenges.metadata_document(config)
        self.metadata_paths = challenges.metadata_paths(config.resource)
        self._accepted: OrderedDict[bytes, tuple[Caller, float]] = OrderedDict()
        self._lock = threading.Lock()
        self._logged: tuple[str, float] = ("", float("-inf"))

    # -- answers ---------------------------------------------------------------------
    def unauthorized(self, description: str | None = None) -> Verdict:
        if description is None:  # no token at all: RFC 6750 §3.1 says no error code
            text = "Unauthorized: this server needs an OAuth access token"
            return Verdict(401, None, text, challenges.challenge(self.config))
        value = challenges.challenge(self.config, error="invalid_token", description=description)
        return Verdict(401, None, f"Unauthorized: {description}", value)

    def insufficient(self, caller: Caller, needed: frozenset[str]) -> Verdict:
        """403, naming the scopes to ask for: what is needed and what was granted (the
        spec's recommended approach: a client that steps up keeps what it had)."""
        missing = " ".join(sorted(caller.lacks(needed)))
        value = challenges.challenge(
            self.config,
            error="insufficient_scope",
            description=f"needs scope {missing}",
            scopes=needed | caller.scopes,
        )
        return Verdict(403, caller, f"Forbidden: insufficient scope, needs {missing}", value)

    def unavailable(self, reason: str, retry_after: int) -> Verdict:
        """503: the reason goes to the log, not to a client that sent no valid token yet
        (it may name an internal JWKS or introspection URL)."""
        now = time.monotonic()
        if reason != self._logged[0] or now - self._logged[1] >= LOG_EVERY:
            self._logged = (reason, now)  # an outage is one line a while, not one a request
            logger.warning("cannot check access tokens now: %s", reason)
        text = "Service Unavailable: the server cannot check access tokens now; retry later"
        return Verdict(503, None, text, None, retry_after)

    def scoped(self, caller: Caller, extra: Iterable[str] = ()) -> Verdict:
        """Accepted if ``caller`` holds the server's scopes and ``extra`` (a tool's)."""
        needed = self.required.union(extra)
        if needed and caller.lacks(needed):
            return self.insufficient(caller, needed)
        return Verdict(200, caller)

    # -- the checks ------------------------------------------------------------------
    def check(self, authorization: str | None) -> Verdict:
        """The verdict if it needs no fetch, else :data:`UNDECIDED`."""
        token = bearer(authorization)
        if token is None:
            return self.unauthorized(None if not authorization else "not a Bearer token")
        if len(token) > MAX_TOKEN:  # nor sent to an introspection endpoint, nor hashed
            return self.unauthorized("token too long")
        cached = self._cached(token)
        if cached is not None:
            return self.scoped(cached)
        if self.introspector is not None:
            return UNDECIDED
        try:
            kid = header_of(token).get("kid")
        except TokenRefused as exc:
            return self.unauthorized(str(exc))
        keys = self.keys
        if keys.keys is None or not keys.fresh():
            return UNDECIDED
        if not keys.has(kid):
            return UNDECIDED if keys.may_refetch() else self._jwt(token)  # 401 unknown key
        return self._jwt(token)

    async def verify(self, authorization: str | None) -> Verdict:
        """The verdict, fetching keys or introspecting when :meth:`check` could not."""
        verdict = self.check(authorization)
        if verdict.status:
            return verdict
        token = bearer(authorization)
        assert token is not None  # check refused any other
        if self.introspector is not None:
            try:
                caller = await self.introspector.caller(token)
            except TokenRefused as exc:
                return self.unauthorized(str(exc))
            except IntrospectionUnavailable as exc:
                return self.unavailable(str(exc), 2)
            until = time.time() + INTROSPECTED_FOR - self.config.leeway
            self._remember(token, caller, min(caller.expires or until, until))
            return self.scoped(caller)
        try:
            await self.keys.refresh()
        except KeysUnavailable as exc:
            if self.keys.keys is None:
                return self.unavailable(str(exc), exc.retry_after)
            # Stale keys still verify the tokens they signed while the issuer is away.
        return self._jwt(token)

    def _jwt(self, token: str) -> Verdict:
        keys = self.keys.keys
        assert keys is not None
        try:
            caller = verify(token, keys, self.config)
        except TokenRefused as exc:  # UnknownKey too
            return self.unauthorized(str(exc))
        self._remember(token, caller, caller.expires or time.time())
        return self.scoped(caller)

    # -- tokens checked before (by hash: the token itself is never kept) -------------
    def _cached(self, token: str) -> Caller | None:
        digest = hashlib.sha256(token.encode()).digest()
        with self._lock:
            found = self._accepted.get(digest)
            if found is None:
                return None
            caller, until = found
            if until <= time.time() - self.config.leeway:  # as exp is judged, leeway too
                del self._accepted[digest]
                return None
            self._accepted.move_to_end(digest)
            return caller

    def _remember(self, token: str, caller: Caller, until: float) -> None:
        digest = hashlib.sha256(token.encode()).digest()
        with self._lock:
            self._accepted[digest] = (caller, until)
            while len(self._accepted) > CACHED_TOKENS:
                self._accepted.popitem(last=False)


def bearer(authorization: str | None) -> str | None:
    """The token of ``Authorization: Bearer <token>`` (the scheme in any case), or None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    return token
