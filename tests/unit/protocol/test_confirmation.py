"""The confirmation policy and its headless fallback (protocol/confirmation.py), sans-IO.

With no notebook front end attached, a call that needs confirmation asks the client's user
through elicitation. The question must travel with the call's own request (an HTTP POST's
stream), so it is sent related to that request's id, which the server hands over.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import CallRecord, Server, Session
from mcp_notebook.protocol.confirmation import Confirmer, ask_client


@dataclass
class Headless:
    """What the Confirmer reads of the app: the policy, the timeout, no front end."""

    confirm_policy: Any = "marked"
    confirm_timeout: float = 30.0
    ui: Any = None
    confirm_headless: str = "elicit"  # as `serve --confirm elicit`: the client is asked


class Client:
    """A session's other end: records what the server sends, with the request it is for."""

    def __init__(self) -> None:
        self.sent: list[tuple[dict[str, Any], Any]] = []
        self.asked = asyncio.Event()

    def outbound(self, message: dict[str, Any], related: Any) -> bool:
        self.sent.append((message, related))
        if message.get("method") == "elicitation/create":
            self.asked.set()
        return True

    async def questions(
        self, count: int, askers: asyncio.Future[Any]
    ) -> list[tuple[dict[str, Any], Any]]:
        """The first ``count`` questions; should ``askers`` end first, what it raised."""
        while True:
            found = [(m, r) for m, r in self.sent if m.get("method") == "elicitation/create"]
            if len(found) >= count:
                return found
            self.asked.clear()
            asked = asyncio.ensure_future(self.asked.wait())
            await asyncio.wait({asked, askers}, return_when=asyncio.FIRST_COMPLETED)
            asked.cancel()
            if askers.done():
                askers.result()  # raises what the askers raised
                raise AssertionError(f"finished with {len(found)} of {count} questions")


def guarded_server() -> Server:
    mcp = NotebookMCP()

    @mcp.tool(confirm=True)
    def delete_rows(table: str) -> str:
        return f"deleted rows from {table}"

    server = Server(mcp.registry)
    server.confirm = Confirmer(Headless()).confirm
    return server


def elicitation_session(client: Client) -> Session:
    return Session(
        initialized=True,
        protocol_version="2025-11-25",
        client_capabilities={"elicitation": {}},
        outbound=client.outbound,
    )


def tools_call(request_id: Any, table: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "delete_rows", "arguments": {"table": table}},
    }


async def test_two_concurrent_calls_ask_each_on_its_own_request():
    server, client = guarded_server(), Client()
    session = server.open_session(elicitation_session(client))
    calls = asyncio.gather(
        *(
            server.handle(tools_call(request_id, table), session)
            for request_id, table in (("first", "orders"), (2, "archive"))
        )
    )
    questions = await client.questions(2, calls)
    related = {r: m for m, r in questions}
    assert set(related) == {"first", 2}
    assert '"table": "orders"' in related["first"]["params"]["message"]
    assert '"table": "archive"' in related[2]["params"]["message"]
    # Answer out of order: the second call is declined, the first approved.
    for answer, action in ((related[2], "decline"), (related["first"], "accept")):
        response = {"jsonrpc": "2.0", "id": answer["id"], "result": {"action": action}}
        assert await server.handle(response, session) is None
    first, second = await calls
    assert first["id"] == "first" and not first["result"].get("isError")
    assert first["result"]["content"][0]["text"] == "deleted rows from orders"
    assert second["id"] == 2 and second["result"]["isError"]
    assert "declined" in second["result"]["content"][0]["text"]
    assert [r.status for r in server.calls] == ["done", "denied"]


async def test_the_question_goes_with_the_request_id_given_not_the_running_task():
    """No scan of the session's running tasks: here no task is the request's at all."""
    client = Client()
    session = elicitation_session(client)
    tool = guarded_server().registry.tools["delete_rows"]

    async def ask(request_id: Any) -> dict[str, Any]:
        record = CallRecord("tools/call", tool.name, {"table": "t"}, session.client_label)
        return await ask_client(tool, {"table": "t"}, session, record, request_id, 30.0)

    both = asyncio.gather(ask(7), ask("eight"))
    questions = await client.questions(2, both)
    assert sorted(str(r) for _, r in questions) == ["7", "eight"]
    for message, _ in questions:
        session.resolve({"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept"}})
    assert await both == [{"table": "t"}, {"table": "t"}]


def test_without_a_front_end_the_app_denies_and_serve_pins_the_choice():
    """`mcp.confirm_headless`: deny unless set; `serve --confirm` pins it for the kernel."""
    app = NotebookMCP()
    assert app.confirm_headless == "deny"
    app.confirm_headless = "Elicit"
    assert app.confirm_headless == "elicit"
    with pytest.raises(ValueError, match="deny, elicit, allow"):
        app.confirm_headless = "maybe"
    served = NotebookMCP()
    served.serve_headless(confirm="allow", port=0)
    assert served.confirm_headless == "allow"
    with pytest.raises(RuntimeError, match="--confirm"):
        served.confirm_headless = "deny"  # a notebook cell cannot overrule the command line


@pytest.mark.parametrize("value", ["abc", None, True, [30], -1, 0, float("nan"), float("inf")])
def test_a_confirmation_timeout_that_is_not_a_positive_number_is_refused_when_set(value):
    # Before, mcp.confirm_timeout = "abc" was taken: %mcp status then failed, and every
    # call that asks first was refused with a ValueError, or (0, nan) denied at once.
    mcp = NotebookMCP("timeouts")
    with pytest.raises((TypeError, ValueError), match="confirm_timeout must be"):
        mcp.confirm_timeout = value
    assert mcp.confirm_timeout == 120.0


def test_a_confirmation_timeout_in_seconds_is_kept_as_a_float():
    mcp = NotebookMCP("timeouts")
    mcp.confirm_timeout = 2
    assert mcp.confirm_timeout == 2.0 and isinstance(mcp.confirm_timeout, float)
    mcp.confirm_timeout = 0.5
    assert mcp.confirm_timeout == 0.5
