"""Per-tool scopes (``@mcp.tool(scopes=[...])``) and the verified caller as a tool and the
call record see it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp.client.auth.utils import extract_field_from_www_auth

from mcp_notebook.protocol.caller import Caller
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


def test_a_tool_needing_a_scope_the_token_lacks_is_403_and_does_not_run(
    issuer: Issuer, protected: Served
) -> None:
    runs = len(protected.runs)
    response = protected.call(issuer.mint(aud=protected.url, scope="mcp"), "write")
    assert response.status_code == 403, response.text
    assert extract_field_from_www_auth(response, "error") == "insufficient_scope"
    # What to ask for: the tool's scope and what was granted (the spec's recommendation).
    assert extract_field_from_www_auth(response, "scope") == "files:write mcp"
    assert extract_field_from_www_auth(response, "resource_metadata") is not None
    assert response.json()["id"] == 7
    assert len(protected.runs) == runs


def test_the_same_token_still_calls_tools_that_need_no_more(
    issuer: Issuer, protected: Served
) -> None:
    token = issuer.mint(aud=protected.url, scope="mcp")
    assert protected.call(token, "write").status_code == 403
    assert protected.call(token, "add").status_code == 200


def test_a_token_with_the_tools_scope_runs_it(issuer: Issuer, protected: Served) -> None:
    response = protected.call(issuer.mint(aud=protected.url, scope="mcp files:write"), "write")
    assert response.status_code == 200, response.text
    assert protected.runs[-1] == "write"


def test_the_tools_scope_does_not_replace_the_servers(issuer: Issuer, protected: Served) -> None:
    response = protected.call(issuer.mint(aud=protected.url, scope="files:write"), "write")
    assert response.status_code == 403
    assert "mcp" in (extract_field_from_www_auth(response, "scope") or "").split()


def test_a_tool_sees_its_caller_through_its_context(issuer: Issuer, protected: Served) -> None:
    token = issuer.mint(aud=protected.url, sub="bob", client_id=None, azp="cli-7", scope="mcp x")
    response = protected.call(token, "whoami")
    assert response.status_code == 200, response.text
    seen = response.json()["result"]["structuredContent"]
    assert seen["subject"] == "bob"
    assert seen["client_id"] == "cli-7"
    assert seen["scopes"] == ["mcp", "x"]
    assert seen["issuer"] == issuer.url
    assert isinstance(seen["expires"], int)
    records = [r for r in protected.server.calls if r.target == "whoami"]
    caller = records[-1].caller
    assert isinstance(caller, Caller)
    assert caller.who == "bob (client cli-7)"
    assert token not in repr(records[-1])  # the record keeps who, never the token


def test_a_session_is_used_only_by_the_token_holder_who_opened_it(
    issuer: Issuer, protected: Served
) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    alice = {**accept, "Authorization": f"Bearer {issuer.mint(aud=protected.url)}"}
    opened = protected.http.post(protected.url, json=init, headers=alice)
    assert opened.status_code == 200, opened.text
    session = {"Mcp-Session-Id": opened.headers["Mcp-Session-Id"]}
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    # Alice again, with a fresh token: her session.
    fresh = {**accept, "Authorization": f"Bearer {issuer.mint(aud=protected.url, jti='2')}"}
    assert (
        protected.http.post(protected.url, json=ping, headers={**fresh, **session}).status_code
        == 200
    )
    mallory = {**accept, "Authorization": f"Bearer {issuer.mint(aud=protected.url, sub='mallory')}"}
    taken = protected.http.post(protected.url, json=ping, headers={**mallory, **session})
    assert taken.status_code == 404


def test_a_tool_reached_through_the_dispatcher_checks_its_scope_too(
    issuer: Issuer, protected: Served
) -> None:
    # The HTTP layer sees a call of call_notebook_tool (no scopes); the chain sees "write".
    protected.server.dispatcher_tools_for_all = True
    try:
        runs = len(protected.runs)
        token = issuer.mint(aud=protected.url, scope="mcp")
        response = protected.call(
            token, "call_notebook_tool", arguments={"name": "write", "arguments": {"a": 1}}
        )
        error = response.json()["error"]
        assert error["code"] == -32003
        assert error["data"] == {"error": "insufficient_scope", "scope": "files:write mcp"}
        assert len(protected.runs) == runs
        granted = issuer.mint(aud=protected.url, scope="mcp files:write")
        response = protected.call(
            granted, "call_notebook_tool", arguments={"name": "write", "arguments": {"a": 1}}
        )
        assert "result" in response.json(), response.text
        assert protected.runs[-1] == "write"
    finally:
        protected.server.dispatcher_tools_for_all = False


def test_the_call_record_names_who_called_as_the_monitor_and_panel_show_it(
    issuer: Issuer, protected: Served
) -> None:
    from mcp_notebook.ui import panelrows, render

    token = issuer.mint(aud=protected.url, sub="dana", client_id="lab-app")
    assert protected.call(token, "add").status_code == 200
    record = [r for r in protected.server.calls if r.caller and r.caller.subject == "dana"][-1]
    assert record.client.endswith(" as dana (client lab-app)")
    assert panelrows.row(record)["client"].endswith("as dana (client lab-app)")
    assert "as dana (client lab-app)" in render.detail(record)
    assert token not in render.detail(record)


def test_a_task_is_its_creators_only(issuer: Issuer, protected: Served) -> None:
    alice = issuer.mint(aud=protected.url, sub="alice", jti="task-a")
    created = protected.modern(alice, "tools/call", {"name": "report", "arguments": {"a": 1}},
                               name="report")  # fmt: skip
    assert created.status_code == 200, created.text
    task_id = created.json()["result"]["taskId"]
    mine = protected.modern(alice, "tasks/get", {"taskId": task_id}, name=task_id)
    assert mine.json()["result"]["taskId"] == task_id, mine.text
    # Bob has a token of the same issuer, and learned the id: "not found", as for no task.
    bob = issuer.mint(aud=protected.url, sub="bob")
    for method in ("tasks/get", "tasks/cancel"):
        refused = protected.modern(bob, method, {"taskId": task_id}, name=task_id)
        assert refused.json()["error"]["code"] == -32602, refused.text


def test_callers_whose_names_share_words_own_different_tasks() -> None:
    def caller(subject: str, client: str | None) -> Caller:
        return Caller(subject, client, frozenset(), "https://issuer.example", None)

    assert caller("a b", "c").key != caller("a", "b c").key
    assert caller("a None", None).key != caller("a", "None").key
    assert caller("alice", "app-1").key == caller("alice", "app-1").key  # a refreshed token
