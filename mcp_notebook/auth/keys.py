"""The issuer's signing keys: found, fetched, cached, refetched when they rotate.

Where the keys are: the configured JWKS URL, else the ``jwks_uri`` of the issuer's
metadata (RFC 8414 ``/.well-known/oauth-authorization-server``, then OpenID Connect's
``/.well-known/openid-configuration``, both with the issuer's path inserted after the
well-known part, and OpenID's appended form last).

A fetch is single-flight (concurrent requests wait for the same one) and happens: when no
keys are held or they are older than the TTL; when a token names a ``kid`` the keys lack,
at most once per cooldown (an attacker's made-up kids cause no fetch storm); and after a
failure, not again for a few seconds (requests meanwhile get 503 at once).
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
import warnings
from typing import Any
from urllib.parse import urlsplit

from joserfc.jwk import KeySet

from ..errors import McpNotebookError
from .config import AuthConfig, AuthConfigError, check_url
from .fetching import FetchError, awaited, fetch_json, submit

MIN_RSA_BITS = 2048
FAILURE_PAUSE = 5.0  # after a failed fetch, requests get 503 this long without a new one


class KeysUnavailable(McpNotebookError, RuntimeError):
    """The server cannot get its issuer's keys now (503, with Retry-After)."""

    def __init__(self, reason: str, retry_after: int) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be (the spec's order, path-aware per RFC 8414)."""
    parts = urlsplit(issuer)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    urls = [
        f"{base}/.well-known/oauth-authorization-server{path}",
        f"{base}/.well-known/openid-configuration{path}",
    ]
    if path:
        urls.append(f"{base}{path}/.well-known/openid-configuration")
    return urls


def _public_keys(document: dict[str, Any]) -> KeySet:
    """The document's RSA, EC and OKP keys. Anything it holds that joserfc cannot import
    (joserfc and cryptography raise many kinds of errors for made-up keys) makes it no
    usable JWKS: a 503 for the server, never a 500. Symmetric (``oct``) keys are dropped:
    no accepted algorithm would use one; so are RSA keys under 2048 bits."""
    listed = document.get("keys")
    if not isinstance(listed, list):
        raise FetchError("the JWKS has no list of keys")
    public = [k for k in listed if isinstance(k, dict) and k.get("kty") in ("RSA", "EC", "OKP")]
    try:
        with warnings.catch_warnings():  # joserfc warns of small RSA keys: dropped below
            warnings.simplefilter("ignore")
            keys: KeySet = KeySet.import_key_set({"keys": public})
    except Exception as exc:  # untrusted input: whatever the parser raises
        raise FetchError(f"the JWKS holds a key that is not one ({type(exc).__name__})") from None
    # RSA under 2048 bits can be factored by someone with the means (RFC 7518 §3.3).
    return KeySet([key for key in keys.keys if _strong(key)])


def _strong(key: Any) -> bool:
    return key.key_type != "RSA" or int(key.raw_value.key_size) >= MIN_RSA_BITS


class KeyCache:
    """One issuer's JWKS, shared by every request of a server (any thread, any loop)."""

    def __init__(self, config: AuthConfig) -> None:
        self.config = config
        self.jwks_url = config.jwks_url
        self.keys: KeySet | None = None
        self.fetches = 0  # JWKS fetches started (what the tests count)
        self._fetched = float("-inf")  # when the keys held were fetched (monotonic)
        self._tried = float("-inf")  # when the last fetch started
        self._failed: str | None = None  # why the last fetch failed, if it did
        self._inflight: concurrent.futures.Future[KeySet] | None = None
        self._lock = threading.Lock()

    def fresh(self) -> bool:
        return self.keys is not None and time.monotonic() - self._fetched < self.config.jwks_ttl

    def has(self, kid: str | None) -> bool:
        keys = self.keys
        if keys is None:
            return False
        if kid is None:
            return len(keys.keys) == 1
        return any(key.kid == kid for key in keys.keys)

    def may_refetch(self) -> bool:
        """May an unknown kid cause a fetch now? Once per cooldown, whatever the kid."""
        return time.monotonic() - self._tried >= self.config.refetch_cooldown

    async def refresh(self) -> KeySet:
        """The keys, fetched now (or by the fetch already under way)."""
        with self._lock:
            now = time.monotonic()
            future = self._inflight
            if future is None:
                if self._failed is not None and now - self._tried < FAILURE_PAUSE:
                    raise KeysUnavailable(self._failed, int(FAILURE_PAUSE) + 1)
                self._tried = now
                self.fetches += 1
                future = self._inflight = submit(self._fetch)
        try:
            keys = await awaited(future, self.config.fetch_timeout * 2)
        except FetchError as exc:
            with self._lock:
                self._failed = str(exc)
                if self._inflight is future and not future.done():
                    future.cancel()  # what is not running yet never will
            # resource.py logs why (at most every 30 seconds for the same reason).
            raise KeysUnavailable(str(exc), int(FAILURE_PAUSE) + 1) from None
        assert isinstance(keys, KeySet)
        return keys

    def _fetch(self) -> KeySet:
        """On a fetch thread: the JWKS (its URL from the metadata the first time)."""
        try:
            if self.jwks_url is None:
                self.jwks_url = self._discover()
            document = fetch_json(self.jwks_url, **self._bounds())
            keys = _public_keys(document)
            if not keys.keys:
                raise FetchError(f"{self.jwks_url} holds no public signing keys")
            with self._lock:
                self.keys, self._fetched, self._failed = keys, time.monotonic(), None
            return keys
        finally:
            with self._lock:
                self._inflight = None

    def _discover(self) -> str:
        problems = []
        for url in metadata_urls(self.config.issuer):
            try:
                metadata = fetch_json(url, **self._bounds())
            except FetchError as exc:
                problems.append(str(exc))
                continue
            if metadata.get("issuer") not in (None, self.config.issuer):
                # RFC 8414 §3.3: the metadata must name the issuer it was asked about.
                raise FetchError(f"{url} names issuer {metadata.get('issuer')!r}")
            jwks_uri = metadata.get("jwks_uri")
            if not isinstance(jwks_uri, str):
                raise FetchError(f"{url} names no jwks_uri")
            try:  # keys over plain http could be anyone's on the way: as for a configured URL
                check_url("jwks_url", jwks_uri)
            except AuthConfigError as exc:
                raise FetchError(f"{url} names a jwks_uri the server will not use: {exc}") from None
            return jwks_uri
        raise FetchError("no authorization server metadata: " + "; ".join(problems))

    def _bounds(self) -> dict[str, Any]:
        return {"timeout": self.config.fetch_timeout, "limit": self.config.fetch_limit}
