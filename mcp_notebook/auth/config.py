"""What a deployment configures: the same names for ``serve``, exports and ``%mcp start``.

``serve --auth-issuer URL [--auth-jwks-url URL] [--auth-audience URI]
[--auth-extra-audiences A,B] [--auth-scopes a,b]
[--auth-introspection-url URL --auth-client-id ID --auth-client-secret-env VAR]``;
an export reads ``MCP_AUTH_ISSUER``, ``MCP_AUTH_JWKS_URL``, ``MCP_AUTH_AUDIENCE``,
``MCP_AUTH_EXTRA_AUDIENCES``, ``MCP_AUTH_SCOPES``, ``MCP_AUTH_INTROSPECTION_URL``,
``MCP_AUTH_CLIENT_ID``, ``MCP_AUTH_CLIENT_SECRET``. Bad values raise
:class:`AuthConfigError` with a sentence a person can act on (a ``UsageError`` in the
magic, an argparse error on the command line).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import McpNotebookError

# Environment variables of an exported server (and their flag names, for messages).
ENV = {
    "issuer": "MCP_AUTH_ISSUER",
    "jwks_url": "MCP_AUTH_JWKS_URL",
    "audience": "MCP_AUTH_AUDIENCE",
    "extra_audiences": "MCP_AUTH_EXTRA_AUDIENCES",
    "scopes": "MCP_AUTH_SCOPES",
    "introspection_url": "MCP_AUTH_INTROSPECTION_URL",
    "client_id": "MCP_AUTH_CLIENT_ID",
    "client_secret": "MCP_AUTH_CLIENT_SECRET",
}
LOOPBACK = ("localhost", "127.0.0.1", "::1")
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")  # RFC 3986 §3.1, an absolute URI's start


class AuthConfigError(McpNotebookError, ValueError):
    """The OAuth configuration cannot work as given."""


@dataclass(frozen=True)
class AuthConfig:
    """A resource server's settings. ``audience`` None: the endpoint's own URL, filled in
    by the transport once it listens (:meth:`for_endpoint`). ``extra_audiences``: other
    ``aud`` values naming this server (Entra ID's API client id or ``api://`` URI); the
    metadata's ``resource`` stays the audience, the URL clients know."""

    issuer: str
    jwks_url: str | None = None
    audience: str | None = None
    extra_audiences: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()  # every request needs these
    introspection_url: str | None = None
    client_id: str | None = None
    client_secret: str | None = dataclasses.field(default=None, repr=False)
    leeway: int = 30  # seconds of clock skew allowed on exp / nbf
    jwks_ttl: float = 300.0  # keys are fetched again after this long
    refetch_cooldown: float = 30.0  # an unknown kid refetches at most once per this
    fetch_timeout: float = 5.0
    fetch_limit: int = 256 * 1024

    def __post_init__(self) -> None:
        check_url("issuer", self.issuer)
        for name in ("jwks_url", "introspection_url"):
            value = getattr(self, name)
            if value is not None:
                check_url(name, value)
        if self.audience is not None:
            check_url("audience", self.audience)
        for value in self.extra_audiences:
            check_audience_value(value)
        for scope in self.scopes:
            if not scope or any(c.isspace() or c in '"\\' for c in scope):
                raise AuthConfigError(f"auth scopes: {scope!r} is not a valid OAuth scope")
        if self.introspection_url and not (self.client_id and self.client_secret):
            raise AuthConfigError(
                "auth introspection needs a client id and secret (--auth-client-id and "
                "--auth-client-secret-env, or MCP_AUTH_CLIENT_ID and MCP_AUTH_CLIENT_SECRET)"
            )

    def for_endpoint(self, url: str) -> AuthConfig:
        """This configuration, its audience defaulting to the endpoint's URL."""
        if self.audience is not None:
            return self
        return dataclasses.replace(self, audience=canonical(url))

    @property
    def resource(self) -> str:
        """The canonical URI of the protected resource (RFC 8707): the audience."""
        if self.audience is None:
            raise AuthConfigError("auth audience is not known before the server listens")
        return self.audience

    @property
    def audiences(self) -> tuple[str, ...]:
        """The ``aud`` values a token may name (one of them): this resource, or an extra."""
        return (self.resource, *self.extra_audiences)


def check_audience_value(value: str) -> None:
    """An extra audience: a JWT StringOrURI (RFC 7519 §2): a plain name (a GUID) or, when
    it has a colon, an absolute URI of any scheme; never fetched, only compared."""
    flag = "--auth-extra-audiences"
    if not value or any(c.isspace() or not c.isprintable() or c in '",\\' for c in value):
        raise AuthConfigError(f"{flag}: {value!r} is not an audience value")
    if ":" in value and not SCHEME.match(value):
        raise AuthConfigError(f"{flag}: {value!r} has a colon but is not an absolute URI")
    if "#" in value:
        raise AuthConfigError(f"{flag}: {value!r} must not have a fragment")


def check_url(name: str, value: str) -> None:
    """An https URL, or http on loopback (a local test issuer); no fragment."""
    flag = "--auth-" + name.replace("_url", "-url").replace("_", "-")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AuthConfigError(f"{flag}: {value!r} is not an http(s) URL")
    if parts.scheme == "http" and parts.hostname not in LOOPBACK:
        raise AuthConfigError(f"{flag}: {value!r} must use https (http only on loopback)")
    if parts.fragment:
        raise AuthConfigError(f"{flag}: {value!r} must not have a fragment")


def canonical(url: str) -> str:
    """RFC 8707's form of a resource URI: lowercase scheme and host, no trailing slash."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}{query}"


def split_scopes(value: str | None) -> tuple[str, ...]:
    """``"a,b c"`` -> ``("a", "b", "c")``: commas or spaces, as people write them."""
    return tuple(s for s in (value or "").replace(",", " ").split() if s)


def from_values(values: Mapping[str, Any]) -> AuthConfig | None:
    """A configuration from named values (flags or environment), None if none is set.
    Any auth value without an issuer is an error: it would silently protect nothing."""
    given = {k: v for k, v in values.items() if v not in (None, "", ())}
    if not given:
        return None
    if "issuer" not in given:
        names = ", ".join(sorted(given))
        raise AuthConfigError(f"auth settings ({names}) need an issuer (--auth-issuer URL)")
    scopes, extra = (given.get(name, ()) for name in ("scopes", "extra_audiences"))
    scopes = split_scopes(scopes) if isinstance(scopes, str) else scopes
    extra = split_scopes(extra) if isinstance(extra, str) else extra
    return AuthConfig(
        issuer=given["issuer"],
        jwks_url=given.get("jwks_url"),
        audience=given.get("audience"),
        extra_audiences=tuple(extra),
        scopes=tuple(scopes),
        introspection_url=given.get("introspection_url"),
        client_id=given.get("client_id"),
        client_secret=given.get("client_secret"),
    )


def from_env(environ: Mapping[str, str] | None = None) -> AuthConfig | None:
    """An exported server's configuration, from ``MCP_AUTH_*``."""
    environ = os.environ if environ is None else environ
    return from_values({key: environ.get(name) for key, name in ENV.items()})


# The ``--auth-*`` flags, by the name after ``--auth-`` (with ``_``): what ``serve`` pins
# for its kernel and ``%mcp start`` / ``mcp.start(oauth=...)`` take. The secret travels as
# the name of the environment variable that holds it, never as itself.
FLAGS = (
    "issuer",
    "jwks_url",
    "audience",
    "extra_audiences",
    "scopes",
    "introspection_url",
    "client_id",
    "client_secret_env",
)


def flag_values(args: Any) -> dict[str, str]:
    """The ``--auth-*`` flags given (argparse's ``auth_issuer`` etc.), by :data:`FLAGS` name."""
    values = {name: getattr(args, f"auth_{name}", None) for name in FLAGS}
    return {name: value for name, value in values.items() if value}


def from_settings(
    values: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> AuthConfig | None:
    """A configuration from :data:`FLAGS` values; the secret read from the environment
    variable ``client_secret_env`` names (a command line is readable by other users)."""
    unknown = sorted(set(values) - set(FLAGS))
    if unknown:
        raise AuthConfigError(f"unknown auth settings {unknown}; known: {', '.join(FLAGS)}")
    environ = os.environ if environ is None else environ
    secret_env = values.get("client_secret_env")
    secret = None
    if secret_env:
        secret = environ.get(secret_env)
        if not secret:
            raise AuthConfigError(f"--auth-client-secret-env: ${secret_env} is not set")
    named = {name: value for name, value in values.items() if name != "client_secret_env"}
    return from_values({**named, "client_secret": secret})


def oauth_settings(value: AuthConfig | Mapping[str, Any] | None) -> AuthConfig | None:
    """``mcp.start(oauth=...)``: a configuration, or its :data:`FLAGS` values."""
    if value is None or isinstance(value, AuthConfig):
        return value
    if not isinstance(value, Mapping):
        raise AuthConfigError(f"oauth= takes an AuthConfig or a dict, not {type(value).__name__}")
    return from_settings(value)
