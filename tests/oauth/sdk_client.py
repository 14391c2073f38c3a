"""The official SDK client with its OAuth flow (``mcp.client.auth.OAuthClientProvider``).

A client people use opens the authorization URL in the user's browser and listens on a
loopback redirect URI for the code. Here a :class:`HeadlessBrowser` does both: it follows
the authorization URL with httpx2 (the authorization server approves at once), reads the
code, state and issuer from the redirect, and hands them to the SDK's callback handler.
Everything else (discovery from the 401, metadata, registration, PKCE, ``resource``,
refresh, step-up) is the SDK's own code.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

# Never listened on: the headless browser reads the redirect instead of following it.
REDIRECT_URI = "http://127.0.0.1:33418/callback"


class AuthorizationRefused(Exception):
    """The authorization server answered the browser with an error, not a code."""


@dataclass
class HeadlessBrowser:
    """The user's browser: where the SDK sends the authorization URL, and whence the code
    comes back. ``visits`` are the authorization URLs it was sent to, in order."""

    visits: list[str] = field(default_factory=list)
    _result: AuthorizationCodeResult | None = None

    async def open(self, url: str) -> None:
        self.visits.append(url)
        async with httpx2.AsyncClient(timeout=30) as browser:
            answer = await browser.get(url)
        location = answer.headers.get("Location", "")
        if answer.status_code != 302 or not location.startswith(REDIRECT_URI):
            raise AuthorizationRefused(f"{answer.status_code} {answer.text or location}")
        query = {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}
        if "error" in query:
            raise AuthorizationRefused(f"{query['error']}: {query.get('error_description')}")
        self._result = AuthorizationCodeResult(
            code=query["code"], state=query.get("state"), iss=query.get("iss")
        )

    async def callback(self) -> AuthorizationCodeResult:
        result, self._result = self._result, None
        assert result is not None, "the callback ran before the browser was redirected"
        return result


@dataclass
class MemoryStorage:
    """The SDK's TokenStorage, in memory: what a client keeps between requests."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass
class OAuthSession:
    """What a test inspects after the flow: the browser's visits and the stored token."""

    browser: HeadlessBrowser
    storage: MemoryStorage
    provider: OAuthClientProvider


def provider_for(url: str, browser: HeadlessBrowser, storage: MemoryStorage) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        client_name="mcp-notebook tests",
        redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    return OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )


@asynccontextmanager
async def oauth_client(
    url: str, mode: str = "auto", storage: MemoryStorage | None = None
) -> AsyncIterator[tuple[Client, OAuthSession]]:
    """The SDK client connected to ``url`` with nothing but its OAuth flow to get in."""
    browser, storage = HeadlessBrowser(), storage or MemoryStorage()
    provider = provider_for(url, browser, storage)
    async with (
        httpx2.AsyncClient(auth=provider, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client, OAuthSession(browser, storage, provider)
