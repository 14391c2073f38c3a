"""The bad-token table: each way an access token can be wrong, one test each, against the
tornado server and the export's ASGI app. A refused request is 401 (or 403 for a missing
scope) with the ``WWW-Authenticate`` a client reads, and runs no tool.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from joserfc.jwk import RSAKey
from mcp.client.auth.utils import extract_field_from_www_auth

from tests.oauth.issuer import Issuer, running_issuer
from tests.oauth.serving import SERVERS, Served, config_for


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as issuer:
        yield issuer


@pytest.fixture(scope="module", params=sorted(SERVERS))
def protected(request: pytest.FixtureRequest, issuer: Issuer) -> Iterator[Served]:
    with SERVERS[request.param](config_for(issuer)) as protected:
        yield protected


def _b64(value: Any) -> str:
    raw = json.dumps(value).encode() if not isinstance(value, bytes) else value
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _alg_none(issuer: Issuer, protected: Served) -> str:
    claims = {"iss": issuer.url, "aud": protected.url, "sub": "mallory", "scope": "mcp"}
    claims["exp"] = int(time.time()) + 300
    return f"{_b64({'alg': 'none', 'kid': issuer.key.kid})}.{_b64(claims)}."


def _hs256_with_public_key(issuer: Issuer, protected: Served) -> str:
    # The classic confusion: the public key (anyone can read the JWKS) as an HMAC secret.
    # joserfc refuses to make one (it will not use a public key as an oct key): by hand.
    public = issuer.key.as_pem(private=False)
    claims = {"iss": issuer.url, "aud": protected.url, "sub": "mallory", "scope": "mcp"}
    claims["exp"] = int(time.time()) + 300
    signed = f"{_b64({'alg': 'HS256', 'kid': issuer.key.kid})}.{_b64(claims)}"
    mac = hmac.new(public, signed.encode(), hashlib.sha256).digest()
    return f"{signed}.{_b64(mac)}"


def _bad_signature(issuer: Issuer, protected: Served) -> str:
    # Signed by another key that claims the issuer's kid.
    other = RSAKey.generate_key(2048, parameters={"kid": issuer.key.kid})
    return issuer.mint(aud=protected.url, key=other)


def _tampered(issuer: Issuer, protected: Served) -> str:
    head, _, signature = issuer.mint(aud=protected.url).split(".")
    claims = {"iss": issuer.url, "aud": protected.url, "sub": "root", "scope": "mcp"}
    claims["exp"] = int(time.time()) + 300
    return f"{head}.{_b64(claims)}.{signature}"


def _now() -> int:
    return int(time.time())


@dataclass(frozen=True)
class Bad:
    name: str
    token: Callable[[Issuer, Served], str | None]
    status: int = 401
    error: str | None = "invalid_token"
    says: str = ""  # words of the error_description


BAD = [
    Bad("no token", lambda i, s: None, error=None),
    Bad("not a JWT", lambda i, s: "abc", says="malformed"),
    Bad("header not JSON", lambda i, s: "bm90anNvbg.e30.c2ln", says="malformed"),
    Bad("header nested past the parser's depth",
        lambda i, s: _b64(b"[" * 4000 + b"]" * 4000) + ".e30.c2ln", says="malformed"),
    Bad("bad signature", _bad_signature, says="signature"),
    Bad("claims changed after signing", _tampered, says="signature"),
    Bad("alg none", _alg_none, says="algorithm"),
    Bad("HS256 with the public key as secret", _hs256_with_public_key, says="algorithm"),
    Bad("expired", lambda i, s: i.mint(aud=s.url, exp=_now() - 120), says="expired"),
    Bad("not yet valid", lambda i, s: i.mint(aud=s.url, nbf=_now() + 300), says="not yet"),
    Bad("no exp", lambda i, s: i.mint(aud=s.url, exp=None), says="exp"),
    Bad("wrong issuer", lambda i, s: i.mint(aud=s.url, iss="https://evil.example"),
        says="issuer"),
    Bad("wrong audience", lambda i, s: i.mint(aud="https://other.example/mcp"),
        says="audience"),
    Bad("no audience", lambda i, s: i.mint(), says="aud"),
    Bad("another resource on this host", lambda i, s: i.mint(aud=s.url + "/other"),
        says="audience"),
    Bad("missing the server's scope", lambda i, s: i.mint(aud=s.url, scope="profile"),
        status=403, error="insufficient_scope", says="mcp"),
]  # fmt: skip


@pytest.mark.parametrize("bad", BAD, ids=[bad.name for bad in BAD])
def test_a_bad_token_is_refused_and_runs_nothing(
    issuer: Issuer, protected: Served, bad: Bad
) -> None:
    runs = len(protected.runs)
    response = protected.call(bad.token(issuer, protected))
    assert response.status_code == bad.status, response.text
    # What a client reads (the official SDK's own parser of the header):
    metadata = extract_field_from_www_auth(response, "resource_metadata")
    assert metadata == protected.base + "/.well-known/oauth-protected-resource/mcp"
    assert extract_field_from_www_auth(response, "error") == bad.error
    scope = extract_field_from_www_auth(response, "scope") or ""
    assert "mcp" in scope.split()
    description = extract_field_from_www_auth(response, "error_description") or ""
    assert bad.says.lower() in description.lower() or bad.error is None
    assert response.json()["error"]["code"] == -32600
    assert len(protected.runs) == runs  # the tool never ran


GOOD = [
    ("a valid token", lambda i, s: i.mint(aud=s.url)),
    ("expired within the leeway", lambda i, s: i.mint(aud=s.url, exp=_now() - 10)),
    ("valid soon, within the leeway", lambda i, s: i.mint(aud=s.url, nbf=_now() + 10)),
    ("an audience list naming this resource",
     lambda i, s: i.mint(aud=["https://other.example", s.url])),
    ("the scope as a list (scp)", lambda i, s: i.mint(aud=s.url, scope=None, scp=["mcp"])),
    ("the scheme in another case", lambda i, s: i.mint(aud=s.url)),
]  # fmt: skip


@pytest.mark.parametrize("name,token", GOOD, ids=[name for name, _ in GOOD])
def test_a_good_token_runs_the_call(
    issuer: Issuer, protected: Served, name: str, token: Callable[[Issuer, Served], str]
) -> None:
    runs = len(protected.runs)
    value = token(issuer, protected)
    headers = {"Authorization": f"bEaReR {value}"} if "case" in name else None
    response = protected.call(None if headers else value, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["structuredContent"] == {"result": 3}
    assert protected.runs[runs:] == ["add"]


def test_an_ec_signed_token_of_the_issuer_is_accepted() -> None:
    with (
        running_issuer(key_type="EC") as issuer,
        SERVERS["tornado"](config_for(issuer)) as protected,
    ):
        assert protected.call(issuer.mint(aud=protected.url)).status_code == 200


def test_a_token_in_the_query_string_is_not_looked_at(issuer: Issuer, protected: Served) -> None:
    token = issuer.mint(aud=protected.url)
    response = httpx.post(
        protected.url + f"?access_token={token}",
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 401


ENTRA_APP = "6f1c2d3e-0000-4000-8000-00000000abcd"  # an API's client id, as Entra ID's aud


@pytest.mark.parametrize(
    "aud,status",
    [
        (ENTRA_APP, 200),
        (f"api://{ENTRA_APP}", 200),
        ("api://another-app", 401),
        (ENTRA_APP.upper(), 401),  # compared exactly, as every audience is
    ],
    ids=["client id", "api uri", "another app", "another case"],
)
def test_an_extra_audience_names_this_server_too(issuer: Issuer, aud: str, status: int) -> None:
    extra = (ENTRA_APP, f"api://{ENTRA_APP}")
    with SERVERS["tornado"](config_for(issuer, extra_audiences=extra)) as protected:
        assert protected.call(issuer.mint(aud=aud)).status_code == status
        # What clients are told stays the URL they know (RFC 9728's resource).
        document = httpx.get(protected.base + "/.well-known/oauth-protected-resource/mcp")
        assert document.json()["resource"] == protected.url


def test_two_authorization_headers_are_refused_by_both_servers(
    issuer: Issuer, protected: Served
) -> None:
    # A proxy that looked at one of them and a server that uses the other disagree on
    # who is asking: neither header is taken (RFC 6750 §3.1, "more than one method").
    good, other = issuer.mint(aud=protected.url), issuer.mint(aud=protected.url, sub="bob")
    runs = len(protected.runs)
    for first, second in ((good, "garbage"), ("garbage", good), (good, other)):
        headers = httpx.Headers(
            [
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Authorization", f"Bearer {first}"),
                ("Authorization", f"Bearer {second}"),
            ]
        )
        message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        response = protected.http.post(protected.url, json=message, headers=headers)
        assert response.status_code == 401, response.text
        assert extract_field_from_www_auth(response, "error") == "invalid_token"
    assert len(protected.runs) == runs
