"""A real OAuth 2.1 authorization server for tests, on a loopback port of this process.

What the MCP authorization spec (2025-11-25) asks of an authorization server and the
official SDK client uses: RFC 8414 metadata (and OpenID discovery, at each of the URLs a
client tries for an issuer with a path, as Keycloak's ``/realms/NAME`` has), RFC 7591
dynamic client registration, the authorization code grant with PKCE S256 only (a missing or
``plain`` challenge is refused), RFC 8707 ``resource`` bound into the token's ``aud``,
rotated refresh tokens, RFC 9207 ``iss`` in the redirect, and access tokens that are RS256
JWTs (RFC 9068 claims) whose keys ``/jwks`` publishes. Signing is joserfc's.

No published test provider fits (oidc-provider-mock, the closest, issues opaque tokens
without ``aud`` and no ``code_challenge_methods_supported``), hence this one, on tornado.

The person at the browser is simulated: ``/authorize`` approves at once as ``subject`` and
grants the requested scopes that ``grantable`` allows (fewer than asked, as a real server
may when a user lacks a role). Everything a client sent is kept in ``seen`` so a test can
say which steps the flow went through.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus, urlencode, urlsplit

import tornado.web
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")
GRANT_TYPES = ("authorization_code", "refresh_token")
CODE_LIFETIME = 60.0  # seconds an authorization code may wait for its token request


@dataclass
class Registered:
    client_id: str
    secret: str | None
    redirect_uris: list[str]
    auth_method: str
    grant_types: list[str]


@dataclass
class Grant:
    """What the user approved: behind an authorization code, then behind a refresh token."""

    client_id: str
    subject: str
    scopes: list[str]
    resource: str | None
    redirect_uri: str = ""
    challenge: str = ""
    expires: float = 0.0


@dataclass
class Seen:
    """One request a client sent: the endpoint and its parameters (query, form or JSON)."""

    endpoint: str
    params: dict[str, Any]


class OAuthError(Exception):
    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error, self.description, self.status = error, description, status


def _challenge_of(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def _valid_resource(resource: str) -> bool:
    """RFC 8707 section 2: an absolute URI without a fragment."""
    parts = urlsplit(resource)
    return bool(parts.scheme in ("http", "https") and parts.netloc and not parts.fragment)


def _valid_redirect(uri: str) -> bool:
    """OAuth 2.1: https, or http on a loopback address (a native client's listener)."""
    parts = urlsplit(uri)
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    return not parts.fragment and (parts.scheme == "https" or (parts.scheme == "http" and loopback))


@dataclass
class AuthorizationServer:
    """Start with :meth:`start` (returns once it listens), stop with :meth:`stop`."""

    subject: str = "alice"
    grantable: tuple[str, ...] = ("notebook:read", "notebook:call")
    scopes_supported: tuple[str, ...] | None = None  # default: ``grantable``
    realm: str = "/realms/tests"
    token_lifetime: int = 300
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.key = RSAKey.generate_key(2048, parameters={"use": "sig", "alg": "RS256"})
        self.key.ensure_kid()
        self.clients: dict[str, Registered] = {}
        self.codes: dict[str, Grant] = {}
        self.refresh_tokens: dict[str, Grant] = {}
        self.origin = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> AuthorizationServer:
        sockets = bind_sockets(0, "127.0.0.1")
        self.origin = f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
        listening = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            server = HTTPServer(self.application())
            server.add_sockets(sockets)
            self._loop.call_soon(listening.set)
            self._loop.run_forever()
            server.stop()
            self._loop.run_until_complete(server.close_all_connections())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="authorization-server", daemon=True)
        self._thread.start()
        if not listening.wait(30):
            raise RuntimeError("the authorization server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)
            self._loop = self._thread = None

    @property
    def issuer(self) -> str:
        return self.origin + self.realm

    @property
    def jwks_url(self) -> str:
        return self.issuer + "/jwks"

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": self.issuer + "/authorize",
            "token_endpoint": self.issuer + "/token",
            "registration_endpoint": self.issuer + "/register",
            "jwks_uri": self.jwks_url,
            "scopes_supported": list(self.scopes_supported or self.grantable),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": list(GRANT_TYPES),
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
            # OpenID discovery's required fields, for a client that reads that document
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        }

    def jwks(self) -> dict[str, Any]:
        return KeySet([self.key]).as_dict(private=False)

    def mint(
        self,
        *,
        subject: str | None = None,
        scopes: Iterable[str] = (),
        audience: str | None = None,
        client_id: str = "minted",
        lifetime: int | None = None,
        **claims: Any,
    ) -> str:
        """An access token as ``/token`` issues it (the same key and claims)."""
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": self.issuer,
            "sub": subject or self.subject,
            "client_id": client_id,
            "scope": " ".join(scopes),
            "iat": now,
            "exp": now + (self.token_lifetime if lifetime is None else lifetime),
            "jti": secrets.token_urlsafe(12),
        }
        if audience is not None:
            body["aud"] = audience
        body.update(claims)
        header = {"alg": "RS256", "kid": self.key.kid, "typ": "at+jwt"}
        return jwt.encode(header, body, self.key)

    def sent(self, endpoint: str) -> list[dict[str, Any]]:
        """The parameters of every request a client sent to ``endpoint``, in order."""
        return [seen.params for seen in self.seen if seen.endpoint == endpoint]

    # --- the endpoints' rules (the handlers below only translate HTTP) ------------------

    def register(self, body: dict[str, Any]) -> dict[str, Any]:
        redirect_uris = body.get("redirect_uris")
        if not isinstance(redirect_uris, list) or not redirect_uris:
            raise OAuthError("invalid_redirect_uri", "redirect_uris must be a non-empty list")
        if not all(isinstance(uri, str) and _valid_redirect(uri) for uri in redirect_uris):
            raise OAuthError("invalid_redirect_uri", "a redirect URI must be https or loopback")
        method = body.get("token_endpoint_auth_method", "client_secret_basic")
        if method not in AUTH_METHODS:
            raise OAuthError("invalid_client_metadata", f"unsupported auth method {method!r}")
        grant_types = body.get("grant_types", ["authorization_code"])
        if not isinstance(grant_types, list) or not set(grant_types) <= set(GRANT_TYPES):
            raise OAuthError("invalid_client_metadata", "unsupported grant_types")
        client = Registered(
            client_id=secrets.token_urlsafe(12),
            secret=None if method == "none" else secrets.token_urlsafe(24),
            redirect_uris=list(redirect_uris),
            auth_method=method,
            grant_types=list(grant_types),
        )
        self.clients[client.client_id] = client
        answer = {
            **body,
            "client_id": client.client_id,
            "client_id_issued_at": int(time.time()),
            "token_endpoint_auth_method": method,
            "grant_types": client.grant_types,
        }
        if client.secret is not None:
            answer.update(client_secret=client.secret, client_secret_expires_at=0)
        return answer

    def authorize(self, query: dict[str, str]) -> str:
        """The URL the browser is redirected to. :class:`OAuthError` (no redirect) when the
        client or its redirect URI cannot be trusted (RFC 6749 section 4.1.2.1)."""
        client = self.clients.get(query.get("client_id", ""))
        if client is None:
            raise OAuthError("invalid_client", "unknown client_id")
        redirect_uri = query.get("redirect_uri", "")
        if redirect_uri not in client.redirect_uris:
            raise OAuthError("invalid_request", "redirect_uri is not one registered")
        answer = {"state": query["state"]} if "state" in query else {}
        answer["iss"] = self.issuer
        try:
            code = self._approve(client, redirect_uri, query)
        except OAuthError as refused:
            answer.update(error=refused.error, error_description=refused.description)
        else:
            answer["code"] = code
        return redirect_uri + ("&" if "?" in redirect_uri else "?") + urlencode(answer)

    def _approve(self, client: Registered, redirect_uri: str, query: dict[str, str]) -> str:
        if query.get("response_type") != "code":
            raise OAuthError("unsupported_response_type", "only response_type=code")
        if not query.get("code_challenge"):
            raise OAuthError("invalid_request", "PKCE is required: no code_challenge")
        if query.get("code_challenge_method") != "S256":
            raise OAuthError("invalid_request", "PKCE needs code_challenge_method=S256")
        resource = query.get("resource")
        if resource is not None and not _valid_resource(resource):
            raise OAuthError("invalid_target", "resource must be an absolute URI")
        requested = query.get("scope", "").split()
        code = secrets.token_urlsafe(24)
        self.codes[code] = Grant(
            client_id=client.client_id,
            subject=self.subject,
            scopes=[scope for scope in requested if scope in self.grantable],
            resource=resource,
            redirect_uri=redirect_uri,
            challenge=query["code_challenge"],
            expires=time.monotonic() + CODE_LIFETIME,
        )
        return code

    def token(self, form: dict[str, str], basic: tuple[str, str] | None) -> dict[str, Any]:
        client = self._authenticate(form, basic)
        grant_type = form.get("grant_type")
        if grant_type not in client.grant_types and grant_type in GRANT_TYPES:
            raise OAuthError("unauthorized_client", f"{grant_type} was not registered")
        if grant_type == "authorization_code":
            grant = self._redeem_code(client, form)
        elif grant_type == "refresh_token":
            grant = self._redeem_refresh(client, form)
        else:
            raise OAuthError("unsupported_grant_type", f"grant_type {grant_type!r}")
        resource = form.get("resource", grant.resource)
        if resource != grant.resource:
            raise OAuthError("invalid_target", "resource differs from the one authorized")
        answer: dict[str, Any] = {
            "access_token": self.mint(
                subject=grant.subject,
                scopes=grant.scopes,
                audience=resource,
                client_id=client.client_id,
            ),
            "token_type": "Bearer",
            "expires_in": self.token_lifetime,
            "scope": " ".join(grant.scopes),
        }
        if "refresh_token" in client.grant_types:
            refresh = secrets.token_urlsafe(24)
            self.refresh_tokens[refresh] = grant
            answer["refresh_token"] = refresh
        return answer

    def _authenticate(self, form: dict[str, str], basic: tuple[str, str] | None) -> Registered:
        client_id, secret = basic if basic else (form.get("client_id", ""), None)
        client = self.clients.get(client_id)
        if client is None:
            raise OAuthError("invalid_client", "unknown client", 401)
        if client.auth_method == "client_secret_post":
            secret = form.get("client_secret")
        if client.auth_method != "none" and (
            secret is None or not secrets.compare_digest(secret, client.secret or "")
        ):
            raise OAuthError("invalid_client", "client authentication failed", 401)
        return client

    def _redeem_code(self, client: Registered, form: dict[str, str]) -> Grant:
        grant = self.codes.pop(form.get("code", ""), None)  # one use, whatever happens next
        if grant is None or grant.client_id != client.client_id:
            raise OAuthError("invalid_grant", "unknown or used authorization code")
        if time.monotonic() > grant.expires:
            raise OAuthError("invalid_grant", "the authorization code expired")
        if form.get("redirect_uri") != grant.redirect_uri:
            raise OAuthError("invalid_grant", "redirect_uri differs from the authorization's")
        verifier = form.get("code_verifier", "")
        if not verifier or not secrets.compare_digest(_challenge_of(verifier), grant.challenge):
            raise OAuthError("invalid_grant", "code_verifier does not match the challenge")
        return grant

    def _redeem_refresh(self, client: Registered, form: dict[str, str]) -> Grant:
        grant = self.refresh_tokens.pop(form.get("refresh_token", ""), None)  # rotated
        if grant is None or grant.client_id != client.client_id:
            raise OAuthError("invalid_grant", "unknown or used refresh token")
        narrower = form.get("scope")
        if narrower is not None:
            if not set(narrower.split()) <= set(grant.scopes):
                raise OAuthError("invalid_scope", "a refresh cannot widen the scope")
            grant = Grant(grant.client_id, grant.subject, narrower.split(), grant.resource)
        return grant

    # --- HTTP ---------------------------------------------------------------------------

    def application(self) -> tornado.web.Application:
        realm = self.realm
        documents = (
            "/.well-known/oauth-authorization-server" + realm,
            "/.well-known/openid-configuration" + realm,
            realm + "/.well-known/openid-configuration",
        )
        routes: list[Any] = [(path, _Metadata, {"server": self}) for path in documents]
        routes += [
            (realm + "/jwks", _Jwks, {"server": self}),
            (realm + "/register", _Register, {"server": self}),
            (realm + "/authorize", _Authorize, {"server": self}),
            (realm + "/token", _Token, {"server": self}),
        ]
        return tornado.web.Application(routes)


class _Handler(tornado.web.RequestHandler):
    def initialize(self, server: AuthorizationServer) -> None:
        self.server = server
        self.set_header("Cache-Control", "no-store")

    def note(self, endpoint: str, params: dict[str, Any]) -> None:
        self.server.seen.append(Seen(endpoint, params))

    def refuse(self, refused: OAuthError) -> None:
        self.set_status(refused.status)
        self.finish({"error": refused.error, "error_description": refused.description})

    def flat(self, arguments: dict[str, list[bytes]]) -> dict[str, str]:
        """Parameters sent once each; a repeated one is refused (RFC 6749 section 3.1)."""
        if any(len(values) > 1 for values in arguments.values()):
            raise OAuthError("invalid_request", "a parameter was sent more than once")
        return {name: values[0].decode("utf-8") for name, values in arguments.items()}


class _Metadata(_Handler):
    def get(self) -> None:
        self.note("metadata", {"path": self.request.path})
        self.finish(self.server.metadata())


class _Jwks(_Handler):
    def get(self) -> None:
        self.note("jwks", {})
        self.finish(self.server.jwks())


class _Register(_Handler):
    def post(self) -> None:
        try:
            body = json.loads(self.request.body or b"null")
            if not isinstance(body, dict):
                raise OAuthError("invalid_client_metadata", "the body must be a JSON object")
            self.note("register", body)
            answer = self.server.register(body)
        except ValueError:
            return self.refuse(OAuthError("invalid_client_metadata", "the body is not JSON"))
        except OAuthError as refused:
            return self.refuse(refused)
        self.set_status(201)
        self.finish(answer)


class _Authorize(_Handler):
    def get(self) -> None:
        try:
            query = self.flat(self.request.query_arguments)
            self.note("authorize", query)
            location = self.server.authorize(query)
        except OAuthError as refused:
            self.set_status(400)  # never redirected: the client cannot be trusted
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            return self.finish(f"{refused.error}: {refused.description}\n")
        self.redirect(location)


class _Token(_Handler):
    def post(self) -> None:
        try:
            form = self.flat(self.request.body_arguments)
            self.note("token", form)
            answer = self.server.token(form, self._basic())
        except OAuthError as refused:
            if refused.status == 401:
                self.set_header("WWW-Authenticate", 'Basic realm="token"')
            return self.refuse(refused)
        self.set_header("Pragma", "no-cache")
        self.finish(answer)

    def _basic(self) -> tuple[str, str] | None:
        header = self.request.headers.get("Authorization", "")
        if not header.lower().startswith("basic "):
            return None
        try:
            pair = base64.b64decode(header[6:], validate=True).decode("utf-8")
        except ValueError as bad:
            raise OAuthError("invalid_client", "malformed Basic credentials", 401) from bad
        client_id, _, secret = pair.partition(":")  # each form-encoded (RFC 6749 2.3.1)
        return unquote_plus(client_id), unquote_plus(secret)
