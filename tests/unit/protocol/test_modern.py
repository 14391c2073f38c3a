"""2026-07-28 in the sans-IO core: _meta checks, result shapes, and input-required rounds."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_notebook import Context, NotebookMCP
from mcp_notebook.protocol import Server, modern
from mcp_notebook.protocol.jsonrpc import RpcError
from tests.schema import validate

MODERN = "2026-07-28"
CAPS = {"elicitation": {}, "sampling": {}}


def request(method: str, params: dict | None = None, id: Any = 1, caps: dict = CAPS) -> dict:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
    }
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }


def make_server() -> tuple[Server, NotebookMCP]:
    app = NotebookMCP()
    ran: list[str] = []
    app.ran = ran  # type: ignore[attr-defined]

    @app.tool
    async def survey(ctx: Context) -> str:
        """Two questions, one after the other."""
        ran.append("started")
        name = await ctx.elicit("Name?", {"type": "object", "properties": {}}, key="name")
        color = await ctx.elicit("Color?", {"type": "object", "properties": {}}, key="color")
        return f"{name.content['v']} likes {color.content['v']}"

    @app.tool
    async def other(ctx: Context) -> str:
        """Another tool that asks."""
        await ctx.elicit("Sure?", key="sure")
        return "ok"

    return Server(app.registry, name="t", version="1"), app


async def call(server: Server, message: dict) -> dict:
    session = modern.open_request(message)
    reply = await server.handle(message, session)
    assert reply is not None
    return reply


def accept(value: str) -> dict:
    return {"action": "accept", "content": {"v": value}}


async def test_rounds_resume_the_paused_tool_with_a_new_state_each_time():
    server, app = make_server()
    first = await call(server, request("tools/call", {"name": "survey"}))
    result = validate(first, "JSONRPCResultResponse", MODERN)["result"]
    validate(result, "InputRequiredResult", MODERN)
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["name"]
    second = await call(
        server,
        request(
            "tools/call",
            {
                "name": "survey",
                "inputResponses": {"name": accept("Ada")},
                "requestState": result["requestState"],
            },
            id=2,
        ),
    )
    middle = second["result"]
    assert list(middle["inputRequests"]) == ["color"]
    assert middle["requestState"] != result["requestState"]
    third = await call(
        server,
        request(
            "tools/call",
            {
                "name": "survey",
                "inputResponses": {"color": accept("blue")},
                "requestState": middle["requestState"],
            },
            id=3,
        ),
    )
    assert third["result"]["content"][0]["text"] == "Ada likes blue"
    assert third["result"]["resultType"] == "complete"
    assert app.ran == ["started"]  # resumed, never re-run


async def test_forged_stale_and_foreign_states_are_clear_errors():
    server, _ = make_server()
    first = (await call(server, request("tools/call", {"name": "survey"})))["result"]
    state = first["requestState"]
    forged = await call(
        server, request("tools/call", {"name": "survey", "requestState": state + "x"})
    )
    assert forged["error"]["code"] == -32602 and "integrity" in forged["error"]["message"]
    foreign = await call(server, request("tools/call", {"name": "other", "requestState": state}))
    assert foreign["error"]["code"] == -32602 and "different request" in foreign["error"]["message"]
    done = await call(
        server,
        request(
            "tools/call",
            {"name": "survey", "requestState": state, "inputResponses": {"name": accept("x")}},
        ),
    )
    assert done["result"]["resultType"] == "input_required"
    stale = await call(server, request("tools/call", {"name": "survey", "requestState": state}))
    assert stale["error"]["code"] == -32602 and "stale" in stale["error"]["message"]


async def test_a_malformed_answer_is_rejected_and_the_call_keeps_waiting():
    server, _ = make_server()
    state = (await call(server, request("tools/call", {"name": "survey"})))["result"][
        "requestState"
    ]
    bad = await call(
        server,
        request(
            "tools/call", {"name": "survey", "requestState": state, "inputResponses": {"name": 5}}
        ),
    )
    assert bad["error"]["code"] == -32602
    good = await call(
        server,
        request(
            "tools/call",
            {"name": "survey", "requestState": state, "inputResponses": {"name": accept("A")}},
        ),
    )
    assert list(good["result"]["inputRequests"]) == ["color"]


async def test_a_retry_without_state_runs_afresh_with_the_answers_by_key():
    server, _ = make_server()
    answers = {"name": accept("Bo"), "color": accept("red"), "unrelated": accept("x")}
    reply = await call(server, request("tools/call", {"name": "survey", "inputResponses": answers}))
    assert reply["result"]["content"][0]["text"] == "Bo likes red"


async def test_a_missing_capability_is_minus_32021_naming_it():
    server, _ = make_server()
    reply = await call(server, request("tools/call", {"name": "other"}, caps={}))
    assert reply["error"]["code"] == -32021
    assert reply["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}
    validate(reply, "JSONRPCErrorResponse", MODERN)


@pytest.mark.parametrize(
    "meta, code",
    [
        ({}, -32602),
        ({"io.modelcontextprotocol/protocolVersion": MODERN}, -32602),
        (
            {
                "io.modelcontextprotocol/protocolVersion": "v9",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
            -32022,
        ),
    ],
)
def test_open_request_checks_meta(meta, code):
    with pytest.raises(RpcError) as error:
        modern.open_request(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
        )
    assert error.value.code == code


async def test_list_methods_never_ask_for_input_and_carry_cache_hints():
    server, _ = make_server()
    for method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list"):
        result = (await call(server, request(method)))["result"]
        assert result["resultType"] == "complete"
        assert (result["ttlMs"], result["cacheScope"]) == (0, "private")


@pytest.mark.parametrize("state", ["é.é", "a.\u2603"])
async def test_a_request_state_that_is_not_ours_is_invalid_params_even_if_not_ascii(state):
    server, _ = make_server()
    reply = await call(server, request("tools/call", {"name": "survey", "requestState": state}))
    assert reply["error"]["code"] == -32602, reply  # was -32603 (compare_digest: non-ASCII)
    assert "integrity" in reply["error"]["message"]
