from __future__ import annotations

from collections.abc import Iterator

import pytest

from .authorization_server import AuthorizationServer


@pytest.fixture(scope="module")
def authorization_server() -> Iterator[AuthorizationServer]:
    """A real authorization server on a free loopback port, for the tests of one module."""
    server = AuthorizationServer().start()
    try:
        yield server
    finally:
        server.stop()
