"""The protected-resource metadata (RFC 9728): protected without a token at the root and the
path-aware well-known URL, naming this resource, its issuer and scopes; the URL a 401
points to is one a client finds it at; Host and Origin are checked as the endpoint's."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
)

from tests.oauth.issuer import Issuer, running_issuer
from tests.oauth.serving import SERVERS, Served, config_for


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as issuer:
        yield issuer


@pytest.fixture(scope="module", params=sorted(SERVERS))
def protected(request: pytest.FixtureRequest, issuer: Issuer) -> Iterator[Served]:
    with SERVERS[request.param](config_for(issuer, scopes=("mcp", "files:read"))) as protected:
        yield protected


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
)
def test_the_document_is_served_without_a_token(
    protected: Served, issuer: Issuer, path: str
) -> None:
    response = httpx.get(protected.base + path)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.json() == {
        "resource": protected.url,
        "authorization_servers": [issuer.url],
        "scopes_supported": ["mcp", "files:read"],
        "bearer_methods_supported": ["header"],
    }


def test_a_client_finds_it_where_the_401_points(protected: Served) -> None:
    refused = protected.call(None)
    assert refused.status_code == 401
    pointed = extract_resource_metadata_from_www_auth(refused)
    # The official SDK's discovery order: the header's URL, then the well-known ones.
    for url in build_protected_resource_metadata_discovery_urls(pointed, protected.url):
        document = httpx.get(url)
        assert document.status_code == 200, url
        assert document.json()["resource"] == protected.url


def test_a_foreign_origin_or_host_is_refused_there_too(protected: Served) -> None:
    url = protected.base + "/.well-known/oauth-protected-resource/mcp"
    assert httpx.get(url, headers={"Origin": "http://evil.example"}).status_code == 403
    assert httpx.get(url, headers={"Host": "evil.example"}).status_code == 403


def test_other_methods_are_not_served(protected: Served) -> None:
    url = protected.base + "/.well-known/oauth-protected-resource"
    response = httpx.post(url, json={})
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET"


def test_a_configured_audience_is_the_resource_and_names_its_path() -> None:
    # Behind a proxy: the public URL is the audience; its path-aware URL is protected too.
    with running_issuer() as issuer:
        config = config_for(issuer, audience="https://notebooks.example.com/team/mcp")
        with SERVERS["tornado"](config) as protected:
            refused = protected.call(None)
            pointed = extract_resource_metadata_from_www_auth(refused)
            expected = "https://notebooks.example.com/.well-known/oauth-protected-resource/team/mcp"
            assert pointed == expected
            local = httpx.get(protected.base + "/.well-known/oauth-protected-resource/team/mcp")
            assert local.json()["resource"] == "https://notebooks.example.com/team/mcp"
            token = issuer.mint(aud="https://notebooks.example.com/team/mcp")
            assert protected.call(token).status_code == 200
            assert protected.call(issuer.mint(aud=protected.url)).status_code == 401


def test_without_oauth_there_is_no_document() -> None:
    from mcp_notebook.export.runtime import exported_app, server_of
    from mcp_notebook.transports.http import HttpTransport

    transport = HttpTransport(server_of(exported_app("plain", {}), inline=True), token="t")
    transport.start()
    try:
        base = transport.url.rsplit("/mcp", 1)[0]
        assert httpx.get(base + "/.well-known/oauth-protected-resource/mcp").status_code == 404
    finally:
        transport.stop()


def test_head_is_refused_rather_than_answered_with_a_body(protected: Served) -> None:
    response = httpx.head(protected.base + "/.well-known/oauth-protected-resource")
    assert response.status_code == 405
