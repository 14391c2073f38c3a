"""A small OAuth issuer for the resource server's tests: real keys, a real HTTP server.

It signs access tokens with joserfc (RSA, or EC), serves its metadata (RFC 8414), its
JWKS and an RFC 7662 introspection endpoint on a loopback port of its own, and counts
what it is asked. ``mode`` switches what the JWKS endpoint does: "normal", "hang" (no
answer until the issuer stops), "garbage" (not JSON), "huge" (past any fetch limit),
"no-keys", "nested" (JSON nested past the parser's depth); ``introspection_mode``
likewise ("normal", "down": 500, "hang": a token it does not know gets no answer until
the issuer stops, one it knows is answered); ``metadata_changes`` replace fields of its
metadata (a ``jwks_uri`` elsewhere).
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, RSAKey

_kids = itertools.count(1)


class Issuer:
    def __init__(self, path: str = "", key_type: str = "RSA") -> None:
        self.key_type = key_type
        self.key = self._new_key()
        self.old_keys: list[Any] = []  # still in the JWKS (a rotation's overlap)
        self.mode: str | dict[str, Any] = "normal"
        self.introspection_mode = "normal"
        self.metadata_changes: dict[str, Any] = {}
        self.jwks_fetches = 0
        self.metadata_fetches = 0
        self.introspections = 0
        self.active: dict[str, dict[str, Any]] = {}  # opaque token -> introspection answer
        self.client = ("resource-server", "s3cret")  # who may introspect
        self._release = threading.Event()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._http.daemon_threads = True
        self.port = self._http.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = self.base + path  # the issuer identifier
        # A short poll: shutdown() waits for it, and every test module stops an issuer.
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def _new_key(self) -> Any:
        kid = f"key-{next(_kids)}"
        if self.key_type == "EC":
            return ECKey.generate_key("P-256", parameters={"kid": kid, "alg": "ES256"})
        return RSAKey.generate_key(2048, parameters={"kid": kid, "alg": "RS256"})

    @property
    def alg(self) -> str:
        return "ES256" if self.key_type == "EC" else "RS256"

    @property
    def jwks_url(self) -> str:
        return self.base + "/jwks"

    @property
    def introspection_url(self) -> str:
        return self.base + "/introspect"

    def jwks(self) -> dict[str, Any]:
        keys = KeySet([self.key, *self.old_keys])
        return keys.as_dict(private=False)

    def rotate(self, keep_old: bool = False) -> None:
        """A new signing key (a new kid); the old one stays published if ``keep_old``."""
        if keep_old:
            self.old_keys.append(self.key)
        self.key = self._new_key()

    def mint(self, *, header: dict[str, Any] | None = None, key: Any = None, **claims: Any) -> str:
        """A signed access token: this issuer's claims, unless ``claims`` change them (a
        claim given as None is left out)."""
        now = int(time.time())
        defaults: dict[str, Any] = {
            "iss": self.url,
            "sub": "alice",
            "client_id": "app-1",
            "iat": now,
            "exp": now + 300,
            "scope": "mcp",
        }
        merged = {k: v for k, v in {**defaults, **claims}.items() if v is not None}
        signing = key or self.key
        head = {"alg": self.alg, "kid": signing.kid, "typ": "at+jwt", **(header or {})}
        head = {k: v for k, v in head.items() if v is not None}
        return jwt.encode(head, merged, signing, algorithms=[head["alg"]])

    def stop(self) -> None:
        self._release.set()
        self._http.shutdown()
        self._http.server_close()


def _handler(issuer: Issuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, value: Any, status: int = 200) -> None:
            self._send(json.dumps(value).encode(), status)

        def _send(self, body: bytes, status: int = 200) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path.startswith("/.well-known/oauth-authorization-server"):
                issuer.metadata_fetches += 1
                if path != "/.well-known/oauth-authorization-server" + _path(issuer.url):
                    return self._json({"error": "not here"}, 404)
                return self._json(
                    {
                        "issuer": issuer.url,
                        "jwks_uri": issuer.jwks_url,
                        "introspection_endpoint": issuer.introspection_url,
                        "token_endpoint": issuer.base + "/token",
                        "authorization_endpoint": issuer.base + "/authorize",
                        "response_types_supported": ["code"],
                        **issuer.metadata_changes,
                    }
                )
            if path == "/jwks":
                issuer.jwks_fetches += 1
                mode = issuer.mode
                if mode == "hang":
                    issuer._release.wait(60)
                    return None
                if mode == "garbage":
                    return self._send(b"<html>not a key set</html>")
                if mode == "no-keys":
                    return self._json({"keys": []})
                if mode == "nested":
                    return self._send(b"[" * 4000 + b"]" * 4000)
                if isinstance(mode, dict):  # a document of the test's own
                    return self._json(mode)
                if mode == "huge":
                    pad = "x" * (1024 * 1024)
                    return self._json({"keys": [], "padding": pad})
                return self._json(issuer.jwks())
            return self._json({"error": "not found"}, 404)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = parse_qs(self.rfile.read(length).decode())
            if self.path != "/introspect":
                return self._json({"error": "not found"}, 404)
            issuer.introspections += 1
            if issuer.introspection_mode == "down":
                return self._json({"error": "down"}, 500)
            token = form.get("token", [""])[0]
            if issuer.introspection_mode == "hang" and token not in issuer.active:
                issuer._release.wait(60)
                return None
            expected = "Basic " + base64.b64encode(":".join(issuer.client).encode()).decode()
            if self.headers.get("Authorization") != expected:
                return self._json({"error": "invalid_client"}, 401)
            return self._json(issuer.active.get(token, {"active": False}))

    return Handler


def _path(url: str) -> str:
    return urlsplit(url).path.rstrip("/")


@contextlib.contextmanager
def running_issuer(**options: Any) -> Iterator[Issuer]:
    issuer = Issuer(**options)
    try:
        yield issuer
    finally:
        issuer.stop()
