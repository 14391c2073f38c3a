"""A hostile client, front end and user against what landed with the front-end registry,
progress after the bridge's fast start and the ``%mcp`` line splitting: a bad value gets a
precise error or is ignored, never an exception; memory stays bounded whatever is sent."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from typing import Any

import pytest

from mcp_notebook import Context, NotebookMCP
from mcp_notebook.protocol import Server, Session
from mcp_notebook.protocol.progress import ProgressLine
from mcp_notebook.protocol.request import RequestContext
from mcp_notebook.protocol.tasklink import TaskLink
from mcp_notebook.ui import frontends
from tests.schema import validate_reply
from tests.unit.ui.test_cellinsert import FakeComm, Kernel, message


# -- %mcp: an unclosed quote before --when -------------------------------------------------
@pytest.mark.parametrize(
    "line",
    ["break 'add --when a > 1", 'break "add --when x', "break 'a\x00" + "b" * 100_000],
    ids=["single", "double", "nul-and-long"],
)
def test_an_unclosed_quote_in_a_break_line_is_a_usage_error(line):
    pytest.importorskip("IPython")
    from IPython.core.error import UsageError

    from mcp_notebook.kernel.magics import McpMagics

    magics = McpMagics(None, NotebookMCP())
    with pytest.raises(UsageError, match="%mcp"):
        magics.mcp(line if "--when" in line else line + " --when x")


# -- progress: what the bridge (or a client posing as it) says was sent ---------------------
def progress_line(sent: Any) -> ProgressLine:
    request = RequestContext(Session())
    request.params = {"_meta": {"progressToken": "t", "mcp-notebook/progressSent": sent}}
    return request.progress_line


@pytest.mark.parametrize(
    "sent",
    [json.loads("1" + "0" * 400), 1e300, 2.0**60, -(10**400), True, "5", None, [1], -3.5],
    ids=["int-1e400", "1e300", "2**60", "int--1e400", "true", "string", "null", "list", "neg"],
)
def test_any_progress_sent_value_keeps_every_notification_increasing(sent):
    line = progress_line(sent)
    values = [line.notice(), line.own(0, 10)[0], line.notice(), line.own(1, 10)[0]]
    values.append(line.own(2, None)[0])
    values.append(line.notice())
    assert all(isinstance(v, float) for v in values)
    assert all(b > a for a, b in itertools.pairwise(values)), values


def test_a_tools_huge_progress_still_increases_with_the_servers_notices():
    line = ProgressLine()
    first = line.own(1e20, None)[0]
    after = line.notice()  # paused at a breakpoint, after the tool's huge value
    again = line.own(1e20, None)[0]  # the tool says the same again (its own check: only >)
    assert first < after < again


# -- the front-end registry: hellos and requests nobody answers ----------------------------
def test_hellos_nobody_closes_are_closed_by_the_kernel_and_stay_bounded():
    kernel = Kernel()
    outcomes: list[Any] = []
    # A front end (hostile, or without comms at all) clicks for ever and closes nothing.
    for _ in range(10 * frontends.MAX_PENDING):
        kernel.frontends.ask("silent", "1", outcomes.append)
    opened = kernel.hellos()
    assert len(opened) == 10 * frontends.MAX_PENDING
    assert sum(not c.is_closed for c in opened) <= frontends.MAX_PENDING
    assert len(kernel.frontends._requests) <= frontends.MAX_PENDING
    assert {o.state for o in outcomes} == {frontends.NO_ANSWER}  # the dropped, each once
    kernel.clock.turn(frontends.WAIT)
    assert all(c.is_closed for c in opened)  # none left in the comm manager
    assert kernel.frontends._requests == {}
    assert len(outcomes) == 10 * frontends.MAX_PENDING  # exactly one outcome per ask


def test_a_hello_a_front_end_closed_is_not_closed_again_and_a_monitors_hello_expires():
    kernel = Kernel()
    kernel.frontends.hello()  # a monitor's, with no request
    (hello,) = kernel.hellos()
    kernel.clock.turn(frontends.WAIT)
    assert hello.is_closed


def test_a_boolean_is_not_a_request_number():
    kernel = Kernel()
    lab = kernel.announce("lab")
    outcomes: list[Any] = []
    kernel.frontends.ask("lab", "1", outcomes.append)
    assert lab.sent[0]["request"] == 1
    lab.message_from("lab", {"request": True, "inserted": True})
    assert outcomes == []


def test_an_announcement_with_a_non_string_session_is_refused():
    kernel = Kernel()
    for session in (1, None, ["a"], {"x": 1}, ""):
        channel = FakeComm(frontends.TARGET)
        kernel.targets[frontends.TARGET](channel, message(session, {"comm_id": "c"}))  # type: ignore[arg-type]
        assert channel.is_closed
    assert kernel.frontends.sessions == []


# -- a task's input_required: questions from two threads ------------------------------------
def test_a_tasks_status_moves_in_the_order_its_questions_open_and_close():
    """A tool's threads may ask at once: the status one thread decided must not be applied
    after another's later one (input_required left on with nothing asked)."""
    link = TaskLink()
    seen: list[str] = []
    other = threading.Thread(target=link.asking, args=(False,))
    blocked: list[bool] = []

    def moved(status: str) -> None:
        if not seen:  # the first question's move: the answer comes from another thread now
            other.start()
            other.join(timeout=0.5)
            blocked.append(other.is_alive())  # it waits for this move to be applied
        seen.append(status)

    link.moved = moved
    link.asking(True)
    other.join()
    assert blocked == [True]
    assert seen == ["input_required", "working"]


# -- a confirmation asked of the client, cancelled while it is out --------------------------
async def test_a_confirm_task_cancelled_while_asking_never_runs_and_a_late_yes_changes_nothing():
    from mcp_notebook.protocol.confirmation import Confirmer
    from tests.unit.protocol.test_tasks_handshake import make, opened, send
    from tests.waiting import until

    server, app, _ = make()
    ran: list[str] = []

    @app.tool(confirm=True)
    def drop(table: str) -> str:
        ran.append(table)
        return f"dropped {table}"

    app.confirm_headless = "elicit"  # as `serve --confirm elicit`
    server.confirm = Confirmer(app).confirm  # headless: the client's user is asked
    session, heard, _ = await opened(server)
    session.client_capabilities = {"elicitation": {}}
    call = {"name": "drop", "arguments": {"table": "t"}, "task": {}}
    task_id = (await send(server, session, "tools/call", call))["result"]["task"]["taskId"]
    question = await until(
        lambda: next((m for m in heard if m.get("method") == "elicitation/create"), None),
        "the confirmation asked of the client",
    )
    cancelled = await send(server, session, "tasks/cancel", {"taskId": task_id})
    assert cancelled["result"]["status"] == "cancelled"
    late = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept"}}
    assert await server.handle(late, session) is None  # an answer gets no reply
    result = await send(server, session, "tasks/result", {"taskId": task_id})
    assert result["error"]["code"] == -32000 and ran == []
    got = await send(server, session, "tasks/get", {"taskId": task_id})
    assert got["result"]["status"] == "cancelled"
    statuses = [
        m["params"]["status"] for m in heard if m.get("method") == "notifications/tasks/status"
    ]
    assert statuses[-1] == "cancelled" and statuses.count("cancelled") == 1


# -- a request's _meta: what the schema allows there -----------------------------------------
def reply_to_meta(meta: Any) -> dict[str, Any]:
    mcp = NotebookMCP("meta")
    message = {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"_meta": meta}}
    return validate_reply(
        "tools/list", asyncio.run(Server(mcp.registry).handle(message, Session()))
    )


@pytest.mark.parametrize(
    "meta, problem",
    [
        ({"progressToken": {"a": 1}}, "progressToken must be a string or an integer"),
        ({"progressToken": [1]}, "progressToken must be a string or an integer"),
        ({"progressToken": True}, "progressToken must be a string or an integer"),
        ({"progressToken": 1.5}, "progressToken must be a string or an integer"),
        (5, "_meta must be an object"),
        ("x", "_meta must be an object"),
    ],
)
def test_a_meta_the_schema_forbids_is_invalid_params_to_its_id(meta, problem):
    # Before, such a progress token was taken and echoed in notifications/progress that
    # were themselves schema-invalid.
    reply = reply_to_meta(meta)
    assert reply["id"] == 9 and reply["error"]["code"] == -32602
    assert problem in reply["error"]["message"]


@pytest.mark.parametrize("token", ["t-1", 7, 0, -3, 4.0])  # 4.0: JSON Schema's integer too
def test_a_progress_token_of_either_allowed_type_is_taken(token):
    assert "tools" in reply_to_meta({"progressToken": token})["result"]


def test_a_null_meta_is_no_meta():
    assert "tools" in reply_to_meta(None)["result"]


# -- ctx.report_progress with what is not a number -------------------------------------------
@pytest.mark.parametrize(
    "call, problem",
    [
        ("ctx.report_progress('x')", "progress must be a number, not 'x'"),
        ("ctx.report_progress(1, total='ten')", "total must be a number, not 'ten'"),
        ("ctx.report_progress(True)", "progress must be a number, not True"),
        ("ctx.report_progress(1, message=5)", "message must be a str, not 5"),
    ],
)
def test_report_progress_names_a_value_that_is_not_a_number(call, problem):
    # Before: "'<=' not supported between instances of 'str' and 'float'" on a second call,
    # or a notification no client could read.
    mcp = NotebookMCP("progress")

    @mcp.tool
    def step(ctx: Context) -> str:
        eval(call, {"ctx": ctx})
        return "stepped"

    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "step"}}
    reply = asyncio.run(Server(mcp.registry).handle(message, Session()))
    assert reply["result"]["isError"]
    assert f"report_progress: {problem}" in reply["result"]["content"][0]["text"]


def test_report_progress_takes_numpys_numbers_as_json_numbers():
    np = pytest.importorskip("numpy")
    mcp = NotebookMCP("progress")

    @mcp.tool
    def count(ctx: Context) -> str:
        for i in np.arange(1, 4):
            ctx.report_progress(i, np.int64(3))
        ctx.report_progress(np.float64(3.5), 4)
        return "counted"

    session, sent = Session(), []
    session.outbound = lambda message, related: sent.append(message) or True
    params = {"name": "count", "_meta": {"progressToken": "p"}}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    reply = asyncio.run(Server(mcp.registry).handle(message, session))
    assert reply["result"]["content"][0]["text"] == "counted"
    progress = [m["params"] for m in sent if m.get("method") == "notifications/progress"]
    assert [(p["progress"], p.get("total")) for p in progress] == [(1, 3), (2, 3), (3, 3), (3.5, 4)]
    json.dumps(progress)  # plain JSON numbers, not numpy's
