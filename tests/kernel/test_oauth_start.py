"""``%mcp start --auth-issuer`` in a real kernel: the notebook's server checks the issuer's
tokens instead of a static token, a tool sees its caller, and bad values are a UsageError
that leaves the kernel running."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.kernels import Kernel, KernelError
from tests.oauth.issuer import Issuer, running_issuer

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "kernel-test", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as issuer:
        yield issuer


@pytest.fixture(scope="module")
def loaded(kernel: Kernel) -> Kernel:
    kernel.run("%load_ext mcp_notebook")
    kernel.run(
        "from mcp_notebook import Context\n"
        "@mcp.tool\n"
        "def whoami(ctx: Context) -> str:\n"
        "    return ctx.caller.who if ctx.caller else 'nobody'\n"
    )
    assert kernel.eval("__import__('mcp_notebook').__file__").startswith(
        __file__.rsplit("/tests/", 1)[0]
    )  # the worktree's package, not another checkout's
    return kernel


def usage_error(kernel: Kernel, line: str) -> str:
    with pytest.raises(KernelError) as error:
        kernel.run(line)
    assert error.value.ename == "UsageError", error.value
    assert kernel.run("1 + 1")[1].strip() == "2"  # the kernel carries on
    return str(error.value.evalue)


def test_start_with_an_issuer_checks_its_tokens(loaded: Kernel, issuer: Issuer) -> None:
    _, output = loaded.run(f"%mcp start --port 0 --auth-issuer {issuer.url} --auth-scopes mcp")
    try:
        url = loaded.eval("mcp.url")
        assert f"OAuth: access tokens of {issuer.url}" in output
        # Not the static token's lines: no "Authentication is off", no stdio bridge command.
        assert "Authentication is off" not in output and "claude mcp add" not in output
        assert loaded.eval("mcp.token") is None  # no static token alongside
        with httpx.Client(timeout=30) as http:
            refused = http.post(url, json=INIT, headers=ACCEPT)
            assert refused.status_code == 401
            assert "resource_metadata=" in refused.headers["WWW-Authenticate"]
            headers = {**ACCEPT, "Authorization": f"Bearer {issuer.mint(aud=url, sub='erin')}"}
            opened = http.post(url, json=INIT, headers=headers)
            assert opened.status_code == 200, opened.text
            session = {"Mcp-Session-Id": opened.headers["Mcp-Session-Id"]}
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "whoami", "arguments": {}},
            }
            answer = http.post(url, json=call, headers={**headers, **session})
            assert answer.status_code == 200, answer.text
            assert answer.json()["result"]["content"][0]["text"] == "erin (client app-1)"
        _, config = loaded.run("%mcp config claude-code")
        assert f"takes OAuth access tokens of {issuer.url}" in config
        _, status = loaded.run("%mcp status")
        assert f"with OAuth access tokens of {issuer.url}" in status
        header = loaded.eval(
            "__import__('mcp_notebook.ui.render', fromlist=['x']).server_state(mcp.ui.state())"
        )
        assert f"OAuth tokens of {issuer.url}" in header and "no auth" not in header
        assert loaded.eval("mcp.calls[-1].caller.subject") == "erin"
        assert loaded.eval("mcp.calls[-1].client") == "kernel-test 1 as erin (client app-1)"
    finally:
        loaded.run("%mcp stop")


@pytest.mark.parametrize(
    "flags,says",
    [
        ("--auth-issuer http://evil.example", "must use https"),
        ("--auth-scopes mcp", "need an issuer"),
        ("--auth-issuer https://i.example --token t", "replaces the token"),
        ("--auth-issuer https://i.example --auth-client-secret-env NO_SUCH_VAR", "is not set"),
    ],
    ids=["http issuer", "no issuer", "with a token", "secret variable unset"],
)
def test_bad_auth_flags_are_a_usage_error(loaded: Kernel, flags: str, says: str) -> None:
    assert says in usage_error(loaded, f"%mcp start --port 0 {flags}")
    assert loaded.eval("mcp.url") is None  # nothing started
