"""A client's answers to a tool's questions (elicitation, sampling, roots), as a hostile
client sends them: both eras check them once, and a bad one is a precise -32602."""

from __future__ import annotations

import asyncio
import http.client
import itertools
import json
from typing import Any

import pytest

from mcp_notebook import Context, NotebookMCP
from mcp_notebook.protocol import Server, Session, modern
from mcp_notebook.protocol.executor import LoopExecutor
from mcp_notebook.transports.http import HttpTransport
from tests.waiting import until

V = "2025-11-25"
MODERN = "2026-07-28"
_ids = itertools.count(1)
CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}


def ask_request(number: int, **params: Any) -> dict:
    """A 2026-07-28 ``tools/call`` of the ``ask`` tool, with ``params`` beside its name."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": CAPS,
    }
    return {
        "jsonrpc": "2.0",
        "id": number,
        "method": "tools/call",
        "params": {"name": "ask", **params, "_meta": meta},
    }


async def modern_call(server: Server, message: dict) -> dict:
    """``message`` through ``server`` as a 2026-07-28 request; its reply, to its id."""
    reply = await server.handle(message, modern.open_request(message))
    assert reply is not None and reply["id"] == message["id"]
    return reply


FORM = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name"],
}


def make() -> tuple[Server, list[Any]]:
    app = NotebookMCP()
    got: list[Any] = []

    @app.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", key="name")
        got.append(answer.content)
        return f"{answer.action}"

    @app.tool
    async def form(ctx: Context) -> str:
        answer = await ctx.elicit("Who?", FORM, key="who")
        got.append(answer.content)
        return f"{answer.action}"

    @app.tool
    async def sample(ctx: Context) -> str:
        got.append(await ctx.sample("Hi", key="s"))
        return "sampled"

    @app.tool
    async def roots(ctx: Context) -> int:
        found = await ctx.list_roots(key="r")
        got.append(found)
        return len(found)

    return Server(app.registry, name="t", version="1"), got


async def opened(server: Server) -> tuple[Session, list[dict]]:
    session = server.open_session(Session())
    heard: list[dict] = []
    session.outbound = lambda message, related: heard.append(message) or True
    params = {"protocolVersion": V, "capabilities": CAPS, "clientInfo": {"name": "raw"}}
    await server.handle(
        {"jsonrpc": "2.0", "id": next(_ids), "method": "initialize", "params": params}, session
    )
    return session, heard


async def handshake_call(tool: str, answer: Any) -> tuple[dict, list[Any]]:
    """Call ``tool`` on the handshake era; answer its one question with ``answer``."""
    server, got = make()
    session, heard = await opened(server)
    message = {
        "jsonrpc": "2.0",
        "id": next(_ids),
        "method": "tools/call",
        "params": {"name": tool},
    }
    call = asyncio.ensure_future(server.handle(message, session))
    question = await until(
        lambda: next((m for m in heard if "id" in m and "method" in m), None), "the question"
    )
    await server.handle({"jsonrpc": "2.0", "id": question["id"], "result": answer}, session)
    reply = await asyncio.wait_for(call, 30)
    assert reply is not None and reply["id"] == message["id"]
    return reply, got


BAD_ELICIT = [
    ({"action": "accept", "content": "Ada"}, "content must be an object, not a string"),
    ({"action": "accept", "content": ["Ada"]}, "content must be an object, not an array"),
    ({"action": "accept", "content": 5}, "content must be an object, not a number"),
    (
        {"action": "accept", "content": {"name": {"first": "Ada"}}},
        "content['name'] must be a string, number, boolean or list of strings, not an object",
    ),
    ({"action": "yes"}, 'action must be "accept", "decline" or "cancel"'),
    ({}, 'action must be "accept", "decline" or "cancel"'),
    ("accept", "the result must be an object, not a string"),
    ([{"action": "accept"}], "the result must be an object, not an array"),
]


@pytest.mark.parametrize(("answer", "problem"), BAD_ELICIT)
async def test_a_bad_elicitation_answer_is_a_precise_error_on_the_handshake_era(answer, problem):
    reply, got = await handshake_call("ask", answer)
    assert reply["error"]["code"] == -32602
    assert reply["error"]["message"] == (
        f"Invalid response from the client to elicitation/create: {problem}"
    )
    assert got == []  # the tool never saw it


@pytest.mark.parametrize(("answer", "problem"), BAD_ELICIT)
async def test_a_bad_elicitation_answer_is_a_precise_error_on_2026(answer, problem):
    server, got = make()
    reply = await modern_call(server, ask_request(9, inputResponses={"name": answer}))
    assert reply["error"]["code"] == -32602
    assert reply["error"]["message"].endswith(f"elicitation/create: {problem}")
    assert got == []


@pytest.mark.parametrize(
    "answer",
    [
        {"action": "accept", "content": {"name": "Ada", "age": 36, "ok": True, "tags": ["a"]}},
        {"action": "accept"},
        {"action": "decline"},
        {"action": "cancel"},
    ],
)
async def test_good_elicitation_answers_still_reach_the_tool(answer):
    reply, got = await handshake_call("ask", answer)
    assert reply["result"]["content"][0]["text"] == answer["action"]
    assert got == [answer.get("content")]


@pytest.mark.parametrize(
    ("tool", "answer", "problem"),
    [
        ("sample", {"content": {"type": "text", "text": "x"}}, 'role must be "user" or'),
        ("sample", {"role": "assistant", "content": "x"}, "content must be a content block"),
        ("roots", {"roots": "file:///"}, "roots must be a list"),
        ("roots", {"roots": ["file:///"]}, "each root must be an object with a string uri"),
    ],
)
async def test_bad_sampling_and_roots_answers_are_precise_errors(tool, answer, problem):
    reply, got = await handshake_call(tool, answer)
    assert reply["error"]["code"] == -32602
    assert problem in reply["error"]["message"]
    assert got == []


async def test_calls_waiting_for_input_are_bounded_and_the_refused_one_stops():
    app = NotebookMCP()
    ended: list[str] = []

    @app.tool
    async def ask(ctx: Context) -> str:
        try:
            answer = await ctx.elicit("Name?", key="name")
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise
        return str(answer.content)

    server = Server(app.registry, name="t", version="1")
    server.continuations.limit = 3

    states = [
        (await modern_call(server, ask_request(n)))["result"]["requestState"] for n in range(3)
    ]
    refused = await modern_call(server, ask_request(3))
    assert refused["error"]["code"] == -32000
    assert "Too many calls wait for input (3)" in refused["error"]["message"]
    await until(lambda: ended == ["cancelled"], "the refused call's tool stopped")
    assert [record.status for record in server.calls][-1] == "error"
    answered = await modern_call(
        server,
        ask_request(
            4,
            requestState=states[0],
            inputResponses={"name": {"action": "accept", "content": {"n": "Ada"}}},
        ),
    )
    assert answered["result"]["content"][0]["text"] == "{'n': 'Ada'}"  # the kept ones still work
    again = await modern_call(server, ask_request(5))
    assert again["result"]["resultType"] == "input_required"  # a place is free again


def test_over_http_a_non_object_elicitation_content_fails_the_call_with_32602(kernel_loop):
    """The same answer, through the real HTTP transport: the question on the call's SSE
    stream, the answer in a POST of its own, the call's one reply a -32602."""
    app = NotebookMCP()

    @app.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Name?")
        return str(answer.content)

    token = "answers-token"
    transport = HttpTransport(Server(app.registry, executor=LoopExecutor(kernel_loop)), token=token)
    transport.start()
    try:
        headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        control = http.client.HTTPConnection("127.0.0.1", transport.port, timeout=30)
        params = {"protocolVersion": V, "capabilities": CAPS, "clientInfo": {"name": "raw"}}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        control.request("POST", "/mcp", json.dumps(init), headers)
        opened = control.getresponse()
        opened.read()
        headers["Mcp-Session-Id"] = opened.headers["Mcp-Session-Id"]
        control.request(
            "POST",
            "/mcp",
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            headers,
        )
        control.getresponse().read()
        calling = http.client.HTTPConnection("127.0.0.1", transport.port, timeout=30)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}}
        calling.request("POST", "/mcp", json.dumps(call), headers)
        stream = calling.getresponse()
        assert stream.headers["Content-Type"].startswith("text/event-stream")
        messages = _events(stream)
        question = next(messages)
        assert question["method"] == "elicitation/create"
        answer = {
            "jsonrpc": "2.0",
            "id": question["id"],
            "result": {"action": "accept", "content": "Ada"},
        }
        control.request("POST", "/mcp", json.dumps(answer), headers)
        assert control.getresponse().status == 202
        reply = next(messages)
        assert reply["id"] == 2
        assert reply["error"] == {
            "code": -32602,
            "message": "Invalid response from the client to elicitation/create: "
            "content must be an object, not a string",
        }
    finally:
        transport.stop()


def _events(response: Any) -> Any:
    """The JSON messages of an SSE response, as they arrive."""
    data: list[str] = []
    while line := response.readline():
        text = line.decode().rstrip("\r\n")
        if text.startswith("data:"):
            data.append(text[5:].strip())
        elif not text and "".join(data):  # a priming event carries no data
            yield json.loads("\n".join(data))
            data = []
        elif not text:
            data = []


async def test_answers_to_questions_never_asked_do_not_pile_up_across_retries():
    server, _ = make()

    state = (await modern_call(server, ask_request(0)))["result"]["requestState"]
    for number in range(1, 21):  # never the one answer asked for, 50 others each time
        junk = {f"other-{number}-{k}": {"action": "decline"} for k in range(50)}
        reply = await modern_call(
            server, ask_request(number, requestState=state, inputResponses=junk)
        )
        assert list(reply["result"]["inputRequests"]) == ["name"]
        state = reply["result"]["requestState"]
    (waiting,) = server.continuations._waiting.values()
    assert len(waiting.asker.responses) == 50  # the last retry's, not 1,000
    done = await modern_call(
        server, ask_request(21, requestState=state, inputResponses={"name": {"action": "accept"}})
    )
    assert done["result"]["content"][0]["text"] == "accept"


async def _answered_with_error(error: Any) -> dict:
    server, got = make()
    session, heard = await opened(server)
    message = {"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "ask"}}
    call = asyncio.ensure_future(server.handle(message, session))
    question = await until(
        lambda: next((m for m in heard if "id" in m and "method" in m), None), "the question"
    )
    await server.handle({"jsonrpc": "2.0", "id": question["id"], "error": error}, session)
    reply = await asyncio.wait_for(call, 30)
    assert reply is not None and reply["id"] == 99 and got == []
    return reply["error"]


@pytest.mark.parametrize("code", ["x", 1.5, 10**30, True, None, [1]])
async def test_a_client_error_with_a_code_json_rpc_does_not_allow_is_not_passed_on(code):
    error = await _answered_with_error({"code": code, "message": "no"})
    assert error == {"code": -32603, "message": "no"}  # our reply stays valid JSON-RPC


async def test_a_client_error_with_a_valid_code_reaches_the_call_as_it_was():
    error = await _answered_with_error({"code": -32001, "message": "the user closed it"})
    assert error == {"code": -32001, "message": "the user closed it"}


# "Servers SHOULD validate received data matches the requested schema": before, a tool that
# asked for a string name could receive 5.
OFF_FORM = [
    ({"name": 5}, "the form's content does not match the requested schema: name: 5 is not of"),
    ({"age": 3}, "the form's content does not match the requested schema: 'name' is a required"),
    (None, "the form's content does not match the requested schema: 'name' is a required"),
]


@pytest.mark.parametrize(("content", "problem"), OFF_FORM)
async def test_an_accepted_form_off_its_schema_is_a_precise_error_in_both_eras(content, problem):
    answer = {"action": "accept", **({} if content is None else {"content": content})}
    reply, got = await handshake_call("form", answer)
    assert reply["error"]["code"] == -32602 and problem in reply["error"]["message"]
    assert got == []
    server, got = make()
    retry = ask_request(9, inputResponses={"who": answer})
    retry["params"]["name"] = "form"
    reply = await modern_call(server, retry)
    assert reply["error"]["code"] == -32602 and problem in reply["error"]["message"]
    assert got == []


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"action": "accept", "content": {"name": "Ada", "age": 36}}, {"name": "Ada", "age": 36}),
        ({"action": "decline"}, None),
        ({"action": "cancel", "content": {"name": 5}}, {"name": 5}),  # not accepted: not read
    ],
)
async def test_a_form_that_fits_or_was_not_accepted_reaches_the_tool(answer, expected):
    reply, got = await handshake_call("form", answer)
    assert reply["result"]["content"][0]["text"] == answer["action"]
    assert got == [expected]
