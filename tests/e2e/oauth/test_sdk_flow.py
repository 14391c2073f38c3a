"""The official SDK client's OAuth flow, end to end, against ``%mcp start`` in a live
kernel, ``mcp-notebook serve`` and an export's ASGI app under uvicorn, each protected by a
real authorization server (Ray Serve: test_sdk_flow_ray.py).

Nothing is configured on the client but its redirect URI: it learns everything from the
server's 401 (``resource_metadata``), the protected-resource metadata, and the
authorization server's metadata; it registers itself (RFC 7591), authorizes with PKCE
S256 and ``resource``, and then lists and calls tools with the token it got.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet
from mcp.shared.exceptions import MCPError

from tests.conftest import MODES
from tests.oauth.authorization_server import AuthorizationServer
from tests.oauth.sdk_client import oauth_client
from tests.oauth.servers import (
    ADMIN,
    GRANTABLE,
    READ,
    WRITE,
    start_kernel,
    start_serve,
    start_uvicorn,
)

STARTERS = {"kernel": start_kernel, "serve": start_serve, "uvicorn": start_uvicorn}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthorizationServer]:
    server = AuthorizationServer(grantable=GRANTABLE, scopes_supported=(READ, WRITE, ADMIN))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module", params=list(STARTERS))
def protected(request, issuer, tmp_path_factory) -> Iterator[str]:
    """The protected MCP endpoint's URL, served by ``serve`` or by uvicorn."""
    running = STARTERS[request.param](issuer, tmp_path_factory.mktemp(request.param))
    yield running.url
    running.stop()


def post(url: str, token: str | None = None) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.post(url, json=INITIALIZE, headers=headers, timeout=30)


def claims(issuer: AuthorizationServer, token: str) -> dict:
    return jwt.decode(token, KeySet.import_key_set(issuer.jwks())).claims


@MODES
async def test_the_sdk_client_gets_in_by_its_oauth_flow_alone(issuer, protected, mode):
    refused = post(protected)
    assert refused.status_code == 401
    challenge = refused.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer ") and 'resource_metadata="' in challenge
    before = len(issuer.seen)

    async with oauth_client(protected, mode) as (client, session):
        assert {t.name for t in (await client.list_tools()).tools} >= {"add", "whoami"}
        assert (await client.call_tool("add", {"a": 40, "b": 2})).content[0].text == "42"

    # the issuer came from the protected-resource metadata (not a guess at the origin)
    found = session.provider.context.protected_resource_metadata
    assert found is not None and str(found.resource) == protected
    assert [str(url) for url in found.authorization_servers] == [issuer.issuer]
    flow = [seen.endpoint for seen in issuer.seen[before:]]
    assert flow[0] == "metadata" and flow.count("register") == 1, flow
    metadata_path = issuer.seen[before].params["path"]  # RFC 8414, the issuer's path after
    assert metadata_path == "/.well-known/oauth-authorization-server" + issuer.realm
    assert flow.index("register") < flow.index("authorize") < flow.index("token"), flow
    (asked,) = [s.params for s in issuer.seen[before:] if s.endpoint == "authorize"]
    (bought,) = [s.params for s in issuer.seen[before:] if s.endpoint == "token"]
    assert asked["code_challenge_method"] == "S256" and asked["resource"] == protected
    assert asked["scope"].split() == [READ]  # what the 401 challenged, nothing more
    assert bought["grant_type"] == "authorization_code" and bought["code_verifier"]
    assert bought["resource"] == protected
    assert session.storage.tokens is not None
    token = claims(issuer, session.storage.tokens.access_token)
    assert token["aud"] == protected and token["scope"] == READ
    assert len(session.browser.visits) == 1


async def test_a_tool_reads_the_callers_subject_from_the_authorization_server(issuer, protected):
    async with oauth_client(protected) as (client, _):
        result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    assert result.content[0].text == f"{issuer.subject} {READ}"


async def test_a_tool_needing_a_scope_the_user_may_have_steps_the_client_up(issuer, protected):
    async with oauth_client(protected) as (client, session):
        assert (await client.call_tool("add", {"a": 1})).content[0].text == "2"
        result = await client.call_tool("note", {"text": "hi"})
        assert not result.is_error, result
        assert result.content[0].text == "noted: hi"
        # the earlier grant is kept: the new token has both scopes
        assert (await client.call_tool("whoami", {})).content[0].text.split()[1:] == [
            READ,
            WRITE,
        ]
    first, second = session.browser.visits
    assert "notebook%3Awrite" in second and "notebook%3Awrite" not in first


async def test_a_tool_needing_a_scope_the_user_lacks_is_refused(issuer, protected):
    async with oauth_client(protected) as (client, session):
        assert (await client.call_tool("add", {"a": 1})).content[0].text == "2"
        # the server's 403 insufficient_scope, as the SDK reports it (not a failed flow)
        with pytest.raises(MCPError, match="insufficient scope, needs notebook:admin"):
            await client.call_tool("wipe", {})
        # the client asked for the scope once (a step-up), was granted less, and stopped
        assert len(session.browser.visits) == 2 and "notebook%3Aadmin" in session.browser.visits[1]
        # and the session goes on with what it has
        assert (await client.call_tool("add", {"a": 2})).content[0].text == "3"


async def test_an_expired_access_token_is_refreshed_without_the_browser(issuer, protected):
    async with oauth_client(protected) as (client, session):
        await client.list_tools()
        session.provider.context.token_expiry_time = 1.0  # long past (0 would mean "never")
        assert (await client.call_tool("add", {"a": 5})).content[0].text == "6"
    assert len(session.browser.visits) == 1
    assert issuer.sent("token")[-1]["grant_type"] == "refresh_token"


def test_a_token_for_another_resource_or_from_no_issuer_is_refused(issuer, protected):
    other = issuer.mint(scopes=[READ], audience="http://127.0.0.1:1/mcp")
    assert post(protected, other).status_code == 401
    assert post(protected, issuer.mint(scopes=[READ], audience=protected)).status_code == 200
    stranger = AuthorizationServer()  # the issuer's name, but keys of its own
    stranger.origin = issuer.origin
    assert post(protected, stranger.mint(scopes=[READ], audience=protected)).status_code == 401
