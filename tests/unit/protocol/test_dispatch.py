"""The JSON-RPC dispatcher below MCP (protocol/dispatch.py), driven directly.

The MCP server and the seed-dialect session both answer through it, so its contract is
what every client relies on: classification, exactly one reply to each request with a
readable id, and the error codes built in one place.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from mcp_notebook.protocol.dispatch import NO_REPLY, Dispatcher, Request, classify
from mcp_notebook.protocol.jsonrpc import RpcError

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = -32700, -32600, -32601
INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603


class Recorder:
    """A dialect with a small method table that remembers what reached it."""

    def __init__(self) -> None:
        self.notifications: list[Any] = []
        self.responses: list[Any] = []
        self.calls: list[tuple[str, Any]] = []
        self.table = {
            "echo": self.echo,
            "refuse": self.refuse,
            "crash": self.crash,
            "cancelled": self.cancelled,
        }

    async def echo(self, request: Request) -> dict[str, Any]:
        return {"params": request.params}

    async def refuse(self, request: Request) -> dict[str, Any]:
        raise RpcError(INVALID_PARAMS, "no thanks", {"why": "test"})

    async def crash(self, request: Request) -> dict[str, Any]:
        raise KeyError("oops")

    async def cancelled(self, request: Request) -> Any:
        return NO_REPLY

    def dispatcher(self, **hooks: Any) -> Dispatcher[str, Any]:
        async def invoke(handler: Any, request: Request, context: str) -> Any:
            self.calls.append((request.method, context))
            return await handler(request)

        return Dispatcher(
            lambda context: self.table,
            invoke,
            notified=lambda message, context: self.notifications.append((message, context)),
            answered=lambda message, context: self.responses.append((message, context)),
            **hooks,
        )


def request(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def code(reply: dict[str, Any]) -> int:
    return reply["error"]["code"]


# -- classification ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "echo"}, "request"),
        ({"jsonrpc": "2.0", "id": "a", "method": "echo", "params": {}}, "request"),
        ({"jsonrpc": "2.0", "method": "note"}, "notification"),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, "response"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "x"}}, "response"),
    ],
)
def test_messages_are_classified(message, kind):
    assert classify(message) == kind


@pytest.mark.parametrize(
    "message",
    [
        [],
        [{"jsonrpc": "2.0", "id": 1, "method": "echo"}],  # MCP has no batches
        "text",
        {"id": 1, "method": "echo"},  # no jsonrpc
        {"jsonrpc": "1.0", "id": 1, "method": "echo"},
        {"jsonrpc": "2.0", "id": None, "method": "echo"},
        {"jsonrpc": "2.0", "id": True, "method": "echo"},
        {"jsonrpc": "2.0", "id": 1.5, "method": "echo"},
        {"jsonrpc": "2.0", "id": 1, "method": None},
        {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": [1, 2]},
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}},
        {"jsonrpc": "2.0", "result": {}},
    ],
)
def test_anything_else_is_an_invalid_request(message):
    with pytest.raises(RpcError) as raised:
        classify(message)
    assert raised.value.code == INVALID_REQUEST


# -- one reply per readable id ----------------------------------------------------------------


async def test_a_request_gets_its_result_with_its_id():
    dialect = Recorder()
    reply = await dialect.dispatcher().dispatch(request("r1", "echo", {"x": 1}), "ctx")
    assert reply == {"jsonrpc": "2.0", "id": "r1", "result": {"params": {"x": 1}}}
    assert dialect.calls == [("echo", "ctx")]


async def test_notifications_and_responses_get_no_reply_and_reach_their_hooks():
    dialect = Recorder()
    dispatcher = dialect.dispatcher()
    note = {"jsonrpc": "2.0", "method": "echo"}  # a notification, even of a table method
    answer = {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert await dispatcher.dispatch(note, "ctx") is None
    assert await dispatcher.dispatch(answer, "ctx") is None
    assert dialect.notifications == [(note, "ctx")]
    assert dialect.responses == [(answer, "ctx")]
    assert dialect.calls == []  # no handler ran


@pytest.mark.parametrize(
    ("message", "reply_id"),
    [
        ({"jsonrpc": "2.0", "id": 5, "method": 42}, 5),  # id readable: echoed
        ({"jsonrpc": "2.0", "id": "x", "params": {}}, "x"),
        ({"jsonrpc": "2.0", "id": None, "method": "echo"}, None),  # not readable: no id
        ({"jsonrpc": "2.0", "id": [1], "method": "echo"}, None),
        ([{"jsonrpc": "2.0", "id": 1, "method": "echo"}], None),
    ],
)
async def test_an_invalid_message_gets_one_invalid_request_reply(message, reply_id):
    reply = await Recorder().dispatcher().dispatch(message, "ctx")
    assert code(reply) == INVALID_REQUEST
    if reply_id is None:
        assert "id" not in reply  # MCP: an error's id is never null
    else:
        assert reply["id"] == reply_id


async def test_every_request_in_a_burst_gets_exactly_one_reply():
    dialect = Recorder()
    dispatcher = dialect.dispatcher()
    methods = ["echo", "refuse", "crash", "missing"] * 5
    messages = [request(i, method) for i, method in enumerate(methods)]
    replies = await asyncio.gather(*(dispatcher.dispatch(m, "ctx") for m in messages))
    assert [r["id"] for r in replies] == list(range(len(methods)))
    for reply in replies:
        assert ("result" in reply) != ("error" in reply)


async def test_a_cancelled_request_is_the_one_without_a_reply():
    assert await Recorder().dispatcher().dispatch(request(1, "cancelled"), "ctx") is None


# -- the error funnel ---------------------------------------------------------------------------


async def test_not_json_is_a_parse_error_without_an_id():
    reply = await Recorder().dispatcher().receive(b'{"jsonrpc": "2.0", "id": 1, ', "ctx")
    assert code(reply) == PARSE_ERROR and "id" not in reply


async def test_receive_parses_then_dispatches():
    reply = await Recorder().dispatcher().receive('{"jsonrpc":"2.0","id":3,"method":"echo"}', "c")
    assert reply == {"jsonrpc": "2.0", "id": 3, "result": {"params": {}}}


async def test_an_unknown_method_is_method_not_found_naming_it():
    reply = await Recorder().dispatcher().dispatch(request(1, "nope"), "ctx")
    assert code(reply) == METHOD_NOT_FOUND
    assert reply["error"]["data"] == {"method": "nope"}


async def test_a_handlers_rpc_error_is_sent_as_it_is():
    reply = await Recorder().dispatcher().dispatch(request(2, "refuse"), "ctx")
    assert reply == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": INVALID_PARAMS, "message": "no thanks", "data": {"why": "test"}},
    }


async def test_any_other_exception_is_an_internal_error_logged_once(caplog):
    with caplog.at_level(logging.ERROR, logger="mcp_notebook.protocol.dispatch"):
        reply = await Recorder().dispatcher().dispatch(request(3, "crash"), "ctx")
    assert code(reply) == INTERNAL_ERROR and reply["id"] == 3
    assert "oops" in reply["error"]["message"]
    assert [r.levelname for r in caplog.records] == ["ERROR"]
    assert "crash" in caplog.records[0].getMessage()


async def test_cancellation_of_the_dispatch_itself_is_not_swallowed():
    started = asyncio.Event()

    class Stuck(Recorder):
        async def echo(self, request: Request) -> dict[str, Any]:
            started.set()
            await asyncio.Event().wait()
            return {}

    task = asyncio.ensure_future(Stuck().dispatcher().dispatch(request(1, "echo"), "ctx"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_dialect_reshapes_every_error_it_sends():
    def public(error: RpcError) -> RpcError:
        return RpcError(error.code, "phrase", error.message)

    dispatcher = Recorder().dispatcher(public=public)
    invalid = await dispatcher.dispatch({"jsonrpc": "2.0", "id": 1}, "ctx")
    refused = await dispatcher.dispatch(request(2, "refuse"), "ctx")
    missing = await dispatcher.dispatch(request(3, "nope"), "ctx")
    crashed = await dispatcher.dispatch(request(4, "crash"), "ctx")
    for reply in (invalid, refused, missing, crashed):
        assert reply["error"]["message"] == "phrase"
    assert [code(r) for r in (invalid, refused, missing, crashed)] == [
        INVALID_REQUEST,
        INVALID_PARAMS,
        METHOD_NOT_FOUND,
        INTERNAL_ERROR,
    ]


async def test_the_gate_runs_before_the_method_is_looked_up():
    async def admit(request: Request, context: str) -> None:
        if request.method != "echo":
            raise RpcError(-32002, "not yet")

    dispatcher = Recorder().dispatcher(admit=admit)
    assert code(await dispatcher.dispatch(request(1, "nope"), "ctx")) == -32002
    assert "result" in await dispatcher.dispatch(request(2, "echo"), "ctx")


async def test_the_table_is_chosen_per_context():
    dialect = Recorder()
    tables = {"old": {"echo": dialect.echo}, "new": {"crash": dialect.crash}}

    async def invoke(handler: Any, request: Request, context: str) -> Any:
        return await handler(request)

    dispatcher: Dispatcher[str, Any] = Dispatcher(lambda era: tables[era], invoke)
    assert "result" in await dispatcher.dispatch(request(1, "echo"), "old")
    assert code(await dispatcher.dispatch(request(2, "echo"), "new")) == METHOD_NOT_FOUND


async def test_a_batch_is_answered_in_order_without_notifications():
    dispatcher = Recorder().dispatcher()
    batch = [request(1, "echo"), {"jsonrpc": "2.0", "method": "note"}, request(2, "nope")]
    replies = await dispatcher.dispatch_batch(batch, "ctx")
    assert [r["id"] for r in replies] == [1, 2]
    assert await dispatcher.dispatch_batch([{"jsonrpc": "2.0", "method": "note"}], "c") is None
    empty = await dispatcher.dispatch_batch([], "ctx")
    assert code(empty) == INVALID_REQUEST and "id" not in empty
