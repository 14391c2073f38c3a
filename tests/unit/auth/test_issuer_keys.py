"""The issuer's keys as the resource server gets them: found through the issuer's
metadata, cached, refetched once for a new kid (never once per request), and the
server's own trouble reaching them a 503 with Retry-After in bounded time, never a 500.
"""

from __future__ import annotations

import concurrent.futures
import json
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from joserfc.jwk import RSAKey

from tests.oauth.issuer import Issuer, running_issuer
from tests.oauth.serving import SERVERS, Served, config_for


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with running_issuer() as issuer:
        yield issuer


@pytest.fixture(params=sorted(SERVERS))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def serve(kind: str, issuer: Issuer, **changes: Any) -> AbstractContextManager[Served]:
    return SERVERS[kind](config_for(issuer, **changes))


def test_the_keys_are_found_through_the_issuers_metadata(issuer: Issuer, kind: str) -> None:
    with serve(kind, issuer) as served:
        assert served.call(issuer.mint(aud=served.url)).status_code == 200
        assert served.call(issuer.mint(aud=served.url)).status_code == 200
    assert issuer.metadata_fetches == 1  # RFC 8414's path first, and it answered
    assert issuer.jwks_fetches == 1  # cached: one fetch for both requests


def test_a_path_issuer_is_discovered_with_the_path_inserted() -> None:
    with running_issuer(path="/realms/demo") as issuer, serve("tornado", issuer) as served:
        assert served.call(issuer.mint(aud=served.url)).status_code == 200


def test_a_burst_of_unknown_kids_causes_at_most_one_fetch(issuer: Issuer, kind: str) -> None:
    with serve(kind, issuer) as served:
        assert served.call(issuer.mint(aud=served.url)).status_code == 200
        fetched = issuer.jwks_fetches
        forged = [issuer.mint(aud=served.url, header={"kid": f"made-up-{n}"}) for n in range(50)]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda token: served.call(token).status_code, forged))
        assert statuses == [401] * 50
        assert issuer.jwks_fetches - fetched <= 1
        assert served.runs == ["add"]


def test_an_unknown_kid_refetches_once_then_is_refused(issuer: Issuer, kind: str) -> None:
    with serve(kind, issuer, refetch_cooldown=0.0) as served:
        assert served.call(issuer.mint(aud=served.url)).status_code == 200
        fetched = issuer.jwks_fetches
        response = served.call(issuer.mint(aud=served.url, header={"kid": "nobody"}))
        assert response.status_code == 401
        assert "unknown key" in response.headers["WWW-Authenticate"]
        assert issuer.jwks_fetches == fetched + 1


def test_a_new_kid_after_rotation_is_accepted(issuer: Issuer, kind: str) -> None:
    with serve(kind, issuer, refetch_cooldown=0.0) as served:
        assert served.call(issuer.mint(aud=served.url)).status_code == 200
        old = issuer.mint(aud=served.url, jti="signed-before-the-rotation")
        issuer.rotate()
        assert served.call(issuer.mint(aud=served.url)).status_code == 200
        # The old key left the JWKS: a token it signed, not seen before, is refused.
        assert served.call(old).status_code == 401
        assert served.runs == ["add", "add"]


def test_a_jwks_that_hangs_is_503_in_bounded_time(issuer: Issuer, kind: str) -> None:
    issuer.mode = "hang"
    with serve(kind, issuer, fetch_timeout=0.5) as served:
        # The metadata answers; the JWKS it names never does.
        response = served.call(issuer.mint(aud=served.url))
        assert response.status_code == 503, response.text
        assert int(response.headers["Retry-After"]) > 0
        assert response.json()["error"]["code"] == -32000
        # Meanwhile the server answers: a second request is 503 at once, no new fetch.
        fetched = issuer.jwks_fetches
        assert served.call(issuer.mint(aud=served.url)).status_code == 503
        assert issuer.jwks_fetches == fetched
        assert served.runs == []


@pytest.mark.parametrize("mode", ["garbage", "huge", "no-keys", "nested"])
def test_a_jwks_that_is_not_one_is_503(issuer: Issuer, kind: str, mode: str) -> None:
    issuer.mode = mode
    with serve(kind, issuer, fetch_limit=64 * 1024) as served:
        response = served.call(issuer.mint(aud=served.url))
        assert response.status_code == 503, response.text
        assert "Retry-After" in response.headers
        assert served.runs == []


def test_an_unreachable_issuer_is_503_and_recovers() -> None:
    issuer = Issuer()
    issuer.stop()  # nothing listens on its port any more
    with serve("tornado", issuer) as served:
        assert served.call(issuer.mint(aud=served.url)).status_code == 503


def test_the_issuer_coming_back_is_noticed_after_the_pause(issuer: Issuer) -> None:
    issuer.mode = "garbage"
    with serve("tornado", issuer) as served:
        assert served.call(issuer.mint(aud=served.url)).status_code == 503
        issuer.mode = "normal"
        assert served.guard.resource is not None
        served.guard.resource.keys._tried -= 60  # as if the failure pause had passed
        assert served.call(issuer.mint(aud=served.url)).status_code == 200


def test_keys_older_than_their_ttl_are_fetched_again(issuer: Issuer) -> None:
    with serve("tornado", issuer, jwks_ttl=0.0) as served:
        assert served.call(issuer.mint(aud=served.url, jti="1")).status_code == 200
        assert served.call(issuer.mint(aud=served.url, jti="2")).status_code == 200
    assert issuer.jwks_fetches == 2


MADE_UP = [
    {"keys": "x"},
    {"keys": [1]},
    {"keys": None},
    {"no keys": []},
    {"keys": [{"kty": "RSA"}]},
    {"keys": [{"kty": "EC", "crv": "P-256", "x": "a", "y": "b"}]},
    {"keys": [{"kty": "oct", "k": "AAAA"}]},
]


@pytest.mark.parametrize("document", MADE_UP, ids=[json.dumps(d) for d in MADE_UP])
def test_a_made_up_key_set_is_503_never_500(issuer: Issuer, document: dict[str, Any]) -> None:
    issuer.mode = document
    with serve("tornado", issuer) as served:
        response = served.call(issuer.mint(aud=served.url))
        assert response.status_code == 503, response.text
        assert served.runs == []


def test_a_503_does_not_tell_the_client_the_servers_internal_urls(
    issuer: Issuer, caplog: pytest.LogCaptureFixture
) -> None:
    issuer.mode = "garbage"
    with serve("tornado", issuer, jwks_url=issuer.jwks_url) as served:
        response = served.call(issuer.mint(aud=served.url))
        assert response.status_code == 503
        assert issuer.jwks_url not in response.text  # the log has it, for the operator
    assert any(issuer.jwks_url in record.getMessage() for record in caplog.records)


def test_keys_the_metadata_names_at_a_plain_http_url_are_not_fetched(
    issuer: Issuer, caplog: pytest.LogCaptureFixture
) -> None:
    # Someone on the network between the server and a plain-http JWKS could hand it keys
    # of their own and mint any token. "127.1" is the issuer's own JWKS under a name that
    # is not a loopback name the configuration accepts http for: as a remote host would be.
    issuer.metadata_changes = {"jwks_uri": f"http://127.1:{issuer.port}/jwks"}
    with serve("tornado", issuer) as served:
        response = served.call(issuer.mint(aud=served.url))
        assert response.status_code == 503, response.text
        assert served.runs == []
    assert issuer.jwks_fetches == 0
    assert any("https" in record.getMessage() for record in caplog.records)


def test_an_rsa_key_under_2048_bits_in_the_key_set_verifies_nothing(issuer: Issuer) -> None:
    # A 1024-bit RSA key can be factored by someone with the means; a token it signed
    # proves nothing (RFC 7518 §3.3: 2048 bits or larger).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # joserfc warns of the size: that is the point
        weak = RSAKey.import_key(
            rsa.generate_private_key(65537, 1024), parameters={"kid": "weak", "alg": "RS256"}
        )
    issuer.old_keys.append(weak)
    with serve("tornado", issuer) as served:
        assert served.call(issuer.mint(aud=served.url, key=weak)).status_code == 401
        assert served.call(issuer.mint(aud=served.url)).status_code == 200
        assert served.runs == ["add"]
