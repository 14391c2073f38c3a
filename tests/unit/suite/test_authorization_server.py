"""The test authorization server keeps the rules a real one keeps, so that a flow passing
against it says something: PKCE S256 only, one-use codes, exact redirect URIs, ``resource``
as the token's audience, rotated refresh tokens, scopes narrowed to what the user may have."""

from __future__ import annotations

import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.oauth.authorization_server import AuthorizationServer

REDIRECT = "http://127.0.0.1:40000/callback"
RESOURCE = "http://127.0.0.1:9999/mcp"


@pytest.fixture
def http():
    with httpx2.Client(timeout=30) as client:
        yield client


def register(http, server: AuthorizationServer, **metadata) -> dict:
    body = {"redirect_uris": [REDIRECT], "grant_types": ["authorization_code", "refresh_token"]}
    answer = http.post(server.issuer + "/register", json={**body, **metadata})
    assert answer.status_code == 201, answer.text
    return answer.json()


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


def authorize(http, server, client, challenge, **extra) -> dict[str, str]:
    """The redirect's query parameters (code or error)."""
    query = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": REDIRECT,
        "state": "s1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": RESOURCE,
        "scope": "notebook:read notebook:admin",
        **extra,
    }
    query = {name: value for name, value in query.items() if value is not None}
    answer = http.get(server.issuer + "/authorize?" + urlencode(query))
    assert answer.status_code == 302, answer.text
    location = answer.headers["Location"]
    assert location.startswith(REDIRECT + "?")
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def token(http, server, client, **form) -> httpx2.Response:
    auth = (client["client_id"], client["client_secret"])
    return http.post(server.issuer + "/token", data=form, auth=auth)


def claims(server, access_token: str) -> dict:
    keys = KeySet.import_key_set(httpx2.get(server.jwks_url).json())
    return jwt.decode(access_token, keys).claims


def test_metadata_is_at_every_url_a_client_tries_for_an_issuer_with_a_path(
    http, authorization_server
):
    origin, realm = authorization_server.origin, authorization_server.realm
    for path in (
        f"/.well-known/oauth-authorization-server{realm}",
        f"/.well-known/openid-configuration{realm}",
        f"{realm}/.well-known/openid-configuration",
    ):
        metadata = http.get(origin + path).json()
        assert metadata["issuer"] == authorization_server.issuer
        assert metadata["code_challenge_methods_supported"] == ["S256"]


def test_a_code_with_its_verifier_buys_a_token_for_the_resource_and_the_granted_scopes(
    http, authorization_server
):
    client = register(http, authorization_server)
    verifier, challenge = pkce()
    redirect = authorize(http, authorization_server, client, challenge)
    assert redirect["state"] == "s1" and redirect["iss"] == authorization_server.issuer
    form = {"grant_type": "authorization_code", "code": redirect["code"]}
    form.update(redirect_uri=REDIRECT, code_verifier=verifier, resource=RESOURCE)
    answer = token(http, authorization_server, client, **form)
    assert answer.status_code == 200, answer.text
    issued = answer.json()
    assert issued["scope"] == "notebook:read"  # notebook:admin is not alice's to have
    body = claims(authorization_server, issued["access_token"])
    assert body["aud"] == RESOURCE and body["sub"] == "alice"
    assert body["iss"] == authorization_server.issuer and body["scope"] == "notebook:read"
    # the code was used up, even by a request that would otherwise be right
    again = token(http, authorization_server, client, **form)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


@pytest.mark.parametrize(
    "pkce_params, why",
    [
        ({"code_challenge": None, "code_challenge_method": None}, "no code_challenge"),
        ({"code_challenge_method": "plain"}, "S256"),
    ],
    ids=["missing", "plain"],
)
def test_an_authorization_without_an_s256_challenge_is_refused(
    http, authorization_server, pkce_params, why
):
    client = register(http, authorization_server)
    redirect = authorize(http, authorization_server, client, pkce()[1], **pkce_params)
    assert redirect["error"] == "invalid_request" and why in redirect["error_description"]
    assert "code" not in redirect


def test_a_wrong_verifier_or_another_resource_buys_nothing(http, authorization_server):
    client = register(http, authorization_server)
    verifier, challenge = pkce()
    for changed, error in (
        ({"code_verifier": pkce()[0]}, "invalid_grant"),
        ({"resource": "http://127.0.0.1:9999/other"}, "invalid_target"),
    ):
        code = authorize(http, authorization_server, client, challenge)["code"]
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT}
        form.update(code_verifier=verifier, resource=RESOURCE)
        answer = token(http, authorization_server, client, **{**form, **changed})
        assert answer.status_code == 400 and answer.json()["error"] == error


def test_a_refresh_token_is_rotated_and_keeps_the_audience(http, authorization_server):
    client = register(http, authorization_server)
    verifier, challenge = pkce()
    code = authorize(http, authorization_server, client, challenge)["code"]
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT}
    first = token(http, authorization_server, client, **form, code_verifier=verifier).json()
    refresh = {"grant_type": "refresh_token", "refresh_token": first["refresh_token"]}
    second = token(http, authorization_server, client, **refresh)
    assert second.status_code == 200, second.text
    assert claims(authorization_server, second.json()["access_token"])["aud"] == RESOURCE
    reused = token(http, authorization_server, client, **refresh)
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"


def test_an_unknown_client_or_redirect_uri_is_never_redirected_to(http, authorization_server):
    client = register(http, authorization_server)
    for query in (
        {"client_id": "nobody", "redirect_uri": REDIRECT},
        {"client_id": client["client_id"], "redirect_uri": "http://127.0.0.1:40000/elsewhere"},
    ):
        answer = http.get(authorization_server.issuer + "/authorize?" + urlencode(query))
        assert answer.status_code == 400 and "Location" not in answer.headers


def test_registration_refuses_a_redirect_that_is_neither_https_nor_loopback(
    http, authorization_server
):
    body = {"redirect_uris": ["http://attacker.example/callback"]}
    answer = http.post(authorization_server.issuer + "/register", json=body)
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_redirect_uri"
    wrong_secret = {"client_id": register(http, authorization_server)["client_id"]}
    answer = http.post(
        authorization_server.issuer + "/token",
        data={"grant_type": "refresh_token", "refresh_token": "x"},
        auth=(wrong_secret["client_id"], "not-the-secret"),
    )
    assert answer.status_code == 401 and answer.json()["error"] == "invalid_client"
