"""A JWT access token checked: signature (joserfc, with the issuer's keys), then issuer,
audience (this resource only, RFC 8707, or an extra audience naming it), expiry and
not-before (with the configured leeway). Only asymmetric algorithms are accepted:
``alg: none`` and HS256 (a shared secret, here: the public key an attacker can read)
never reach a key.
"""

from __future__ import annotations

import json
from base64 import urlsafe_b64decode
from typing import TYPE_CHECKING, Any

from joserfc import jwt
from joserfc.errors import (
    BadSignatureError,
    ExpiredTokenError,
    InvalidClaimError,
    JoseError,
    MissingClaimError,
)
from joserfc.jwk import KeySet

from ..errors import McpNotebookError
from ..protocol.caller import Caller
from .config import AuthConfig

if TYPE_CHECKING:
    from joserfc.jwk import GuestProtocol

ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
MAX_TOKEN = 16 * 1024  # characters: a real access token is a few hundred to a few thousand


class TokenRefused(McpNotebookError, ValueError):
    """The token is not one this resource accepts: 401 ``invalid_token``, saying why."""


class UnknownKey(TokenRefused):
    """The token names a key (``kid``) the issuer's key set does not hold."""


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2 and len(token) <= MAX_TOKEN


def header_of(token: str) -> dict[str, Any]:
    """The JOSE header, unverified: which key to look for, which algorithm it claims."""
    if not looks_like_jwt(token):
        raise TokenRefused("malformed token: not a JWT")
    part = token.split(".", 1)[0]
    try:
        header = json.loads(urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (ValueError, UnicodeDecodeError, RecursionError):  # nesting: json's own depth cap
        raise TokenRefused("malformed token: its header is not base64url JSON") from None
    if not isinstance(header, dict):
        raise TokenRefused("malformed token: its header is not a JSON object")
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise TokenRefused(f"token algorithm {str(alg)[:20]!r} is not accepted")
    kid = header.get("kid")
    if kid is not None and not isinstance(kid, str):
        raise TokenRefused("malformed token: its kid is not a string")
    return header


def verify(token: str, keys: KeySet, config: AuthConfig) -> Caller:
    """The token's holder, once every check passed; :class:`TokenRefused` says which not."""
    header = header_of(token)
    kid = header.get("kid")

    def key_for(guest: GuestProtocol) -> Any:
        if kid is None:
            if len(keys.keys) == 1:
                return keys.keys[0]
            raise UnknownKey("token names no kid and the issuer has several keys")
        for key in keys.keys:
            if key.kid == kid:
                return key
        raise UnknownKey(f"token signed with unknown key {kid[:64]!r}")

    try:
        token_ = jwt.decode(token, key_for, algorithms=list(ALGORITHMS))
    except UnknownKey:
        raise
    except BadSignatureError:
        raise TokenRefused("token signature does not verify") from None
    except Exception as exc:  # an attacker's bytes: whatever the parser raises is a 401
        raise TokenRefused(f"malformed token ({type(exc).__name__})") from None
    claims = token_.claims
    registry = jwt.JWTClaimsRegistry(
        leeway=config.leeway,
        iss={"essential": True, "value": config.issuer},
        aud={"essential": True, "values": list(config.audiences)},
        exp={"essential": True},
    )
    try:
        registry.validate(claims)
    except ExpiredTokenError:
        raise TokenRefused("token expired") from None
    except MissingClaimError as exc:
        raise TokenRefused(f"token {str(exc.description).lower()}") from None
    except InvalidClaimError as exc:
        raise TokenRefused(_claim_problem(exc, claims)) from None
    except (JoseError, ValueError, TypeError, OverflowError) as exc:
        raise TokenRefused(f"invalid claims ({type(exc).__name__})") from None
    return caller_of(claims)


def _claim_problem(error: InvalidClaimError, claims: dict[str, Any]) -> str:
    text = str(error.description or error)
    if "not yet valid" in text:
        return "token not yet valid (nbf)"
    for claim, says in (("aud", "token audience is not this resource"), ("iss", "wrong issuer")):
        if f"'{claim}'" in text:
            return says
    return f"invalid claim: {text[:120]}"


def scopes_of(claims: dict[str, Any]) -> frozenset[str]:
    """``scope`` (a space-separated string, RFC 9068; some issuers send a list) or ``scp``."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(s for s in value if isinstance(s, str))
    return frozenset()


def caller_of(claims: dict[str, Any]) -> Caller:
    def text(name: str) -> str | None:
        value = claims.get(name)
        return value[:256] if isinstance(value, str) else None

    expires = claims.get("exp")
    return Caller(
        subject=text("sub"),
        client_id=text("client_id") or text("azp"),
        scopes=scopes_of(claims),
        issuer=text("iss"),
        expires=int(expires) if isinstance(expires, (int, float)) else None,
    )
