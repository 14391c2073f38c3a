"""Who can reach the server, said exactly; no token on a network address only on purpose."""

from __future__ import annotations

import pytest

from mcp_notebook import NotebookMCP, exposure


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.0.2.10", "myhost.example"])
def test_no_auth_on_a_network_address_needs_the_flag(host):
    with pytest.raises(exposure.UnsafeBind, match="--allow-remote-no-auth"):
        exposure.check(host, auth=False, allow_remote_no_auth=False)
    exposure.check(host, auth=False, allow_remote_no_auth=True)
    exposure.check(host, auth=True, allow_remote_no_auth=False)


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_without_a_token_is_allowed(host):
    exposure.check(host, auth=False, allow_remote_no_auth=False)
    assert exposure.who_can_reach(host, 8765, "t0k") is None  # the default says nothing
    said = exposure.who_can_reach(host, 8765, None)
    assert said is not None and "any user or program on this machine" in said


def test_mcp_start_refuses_before_touching_anything():
    mcp = NotebookMCP()
    with pytest.raises(exposure.UnsafeBind):
        mcp.start("0.0.0.0", 0, auth=False)
    assert not mcp.running


def test_a_wildcard_bind_names_the_addresses_it_answers_on():
    said = exposure.who_can_reach("0.0.0.0", 8765, None)
    assert said is not None
    assert "every host that can route to" in said and "on port 8765" in said
    assert "127.0.0.1" in said  # a wildcard answers on loopback too
    assert "no token" in said and "--allow-remote-no-auth" in said
    with_token = exposure.who_can_reach("192.0.2.10", 8765, "secret")
    assert with_token is not None and "192.0.2.10 on port 8765" in with_token
    assert "token is what keeps them out" in with_token and "secret" not in with_token


def test_a_network_bind_with_a_token_still_checks_token_and_origin():
    from mcp_notebook.transports.security import Guard

    # A wildcard serves whatever names reach it: Host is not checked, the token and the
    # Origin are (a rebinding page sends its own Origin, and cannot know the token).
    wildcard = Guard(bind_host="0.0.0.0", token="t0k")
    assert wildcard.host_problem("myhost.example:8765") is None
    assert wildcard.auth_problem(None) == "Missing bearer token"
    assert wildcard.auth_problem("Bearer t0k") is None
    assert wildcard.origin_problem("http://evil.example") is not None
    # One address: Host must name it (or loopback).
    one = Guard(bind_host="192.0.2.10", token="t0k")
    assert one.host_problem("192.0.2.10:8765") is None
    assert one.host_problem("localhost:8765") is None
    assert one.host_problem("evil.example:8765") is not None
