"""Opaque access tokens, checked at the issuer's introspection endpoint (RFC 7662)."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Iterator

import pytest
from mcp.client.auth.utils import extract_field_from_www_auth

from mcp_notebook.auth.config import AuthConfig, AuthConfigError
from tests.oauth.issuer import Issuer, running_issuer
from tests.oauth.serving import SERVERS, Served, config_for


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with running_issuer() as issuer:
        yield issuer


@pytest.fixture(params=sorted(SERVERS))
def protected(request: pytest.FixtureRequest, issuer: Issuer) -> Iterator[Served]:
    client_id, secret = issuer.client
    config = config_for(
        issuer,
        introspection_url=issuer.introspection_url,
        client_id=client_id,
        client_secret=secret,
    )
    with SERVERS[request.param](config) as protected:
        yield protected


def _active(issuer: Issuer, protected: Served, **changes: object) -> dict[str, object]:
    answer: dict[str, object] = {
        "active": True,
        "sub": "carol",
        "client_id": "app-9",
        "scope": "mcp",
        "iss": issuer.url,
        "aud": protected.url,
        "exp": int(time.time()) + 300,
    }
    answer.update(changes)
    return {k: v for k, v in answer.items() if v is not None}


def test_an_active_token_runs_the_call_and_names_its_holder(
    issuer: Issuer, protected: Served
) -> None:
    issuer.active["opaque-1"] = _active(issuer, protected)
    response = protected.call("opaque-1", "whoami")
    assert response.status_code == 200, response.text
    assert response.json()["result"]["structuredContent"]["subject"] == "carol"
    # Asked once; the answer is trusted for a short while (the next call asks nobody).
    assert protected.call("opaque-1", "add").status_code == 200
    assert issuer.introspections == 1


def test_an_inactive_token_is_401(issuer: Issuer, protected: Served) -> None:
    response = protected.call("never-issued")
    assert response.status_code == 401
    assert extract_field_from_www_auth(response, "error") == "invalid_token"
    assert "not active" in (extract_field_from_www_auth(response, "error_description") or "")
    assert protected.runs == []


@pytest.mark.parametrize(
    "changes,says",
    [
        ({"aud": "https://other.example/mcp"}, "audience"),
        # The issuer's other resources' tokens are active too: an answer that does not say
        # whose a token is cannot show it is this server's (the MCP spec's MUST).
        ({"aud": None}, "audience"),
        ({"iss": "https://evil.example"}, "issuer"),
        ({"exp": 1000}, "expired"),
    ],
    ids=["another audience", "no audience", "another issuer", "expired"],
)
def test_an_active_token_for_elsewhere_is_401(
    issuer: Issuer, protected: Served, changes: dict[str, object], says: str
) -> None:
    issuer.active["opaque-2"] = _active(issuer, protected, **changes)
    response = protected.call("opaque-2")
    assert response.status_code == 401
    assert says in (extract_field_from_www_auth(response, "error_description") or "")
    assert protected.runs == []


def test_an_active_token_without_the_scope_is_403(issuer: Issuer, protected: Served) -> None:
    issuer.active["opaque-3"] = _active(issuer, protected, scope="profile")
    response = protected.call("opaque-3")
    assert response.status_code == 403
    assert extract_field_from_www_auth(response, "error") == "insufficient_scope"


def test_an_unreachable_introspection_endpoint_is_503(issuer: Issuer, protected: Served) -> None:
    issuer.introspection_mode = "down"
    response = protected.call("opaque-4")
    assert response.status_code == 503
    assert "Retry-After" in response.headers
    assert protected.runs == []


def test_introspection_needs_the_servers_own_credentials() -> None:
    with pytest.raises(AuthConfigError, match="client id and secret"):
        AuthConfig(issuer="https://issuer.example", introspection_url="https://issuer.example/i")


def test_a_flood_of_made_up_tokens_leaves_no_backlog_behind(
    issuer: Issuer, protected: Served
) -> None:
    # Waves of made-up tokens at an endpoint that does not answer them: each wave's
    # clients give up (503), and what they asked must not stay queued for the next real
    # token to wait behind (nor grow with every wave).
    issuer.introspection_mode = "hang"
    made_up = iter(range(10_000))
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        for _wave in range(3):
            tokens = [f"made-up-{next(made_up)}" for _ in range(16)]
            statuses = set(pool.map(lambda token: protected.call(token).status_code, tokens))
            assert statuses == {503}
    issuer.active["opaque-real"] = _active(issuer, protected)
    response = protected.call("opaque-real")
    assert response.status_code == 200, response.text
    assert protected.runs == ["add"]


def test_an_extra_audience_is_accepted_from_introspection_too(issuer: Issuer) -> None:
    client_id, secret = issuer.client
    config = config_for(
        issuer,
        introspection_url=issuer.introspection_url,
        client_id=client_id,
        client_secret=secret,
        extra_audiences=("api://mcp-notebook",),
    )
    with SERVERS["tornado"](config) as protected:
        issuer.active["opaque-entra"] = _active(issuer, protected, aud=["api://mcp-notebook"])
        issuer.active["opaque-other"] = _active(issuer, protected, aud="api://other")
        assert protected.call("opaque-entra").status_code == 200
        assert protected.call("opaque-other").status_code == 401


def test_a_token_longer_than_any_real_one_is_not_sent_to_the_issuer(
    issuer: Issuer, protected: Served
) -> None:
    asked = issuer.introspections
    response = protected.call("x" * 20_000)  # a real one is a few hundred characters
    assert response.status_code == 401
    assert "too long" in (extract_field_from_www_auth(response, "error_description") or "")
    assert issuer.introspections == asked
