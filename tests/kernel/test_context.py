"""Tools that talk back: progress, logging, elicitation, sampling, roots, cancellation, content."""

from __future__ import annotations

import asyncio
import base64
import functools

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import MODES, connect, start_server
from tests.schema import validate
from tests.sdk_scenarios import (
    SAMPLING_AND_ROOTS,
    LogLines,
    Progress,
    check_logging_only_when_asked,
    check_sampling_and_roots,
    check_undeclared_sampling,
    dump,
)
from tests.waiting import OPEN_GET_STREAMS, until

SETUP = r"""
import asyncio, base64
from mcp_notebook import (
    Audio, Blob, Context, EmbeddedResource, Image, ResourceLink, ToolResult,
)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
ran = []

@mcp.tool
async def count_up(steps: int, ctx: Context) -> str:
    for i in range(1, steps + 1):
        ctx.report_progress(i, total=steps, message=f"step {i}")
        await asyncio.sleep(0.01)
    return "counted"

@mcp.tool
def chatty(ctx: Context) -> str:
    for level in ("debug", "info", "warning", "error"):
        ctx.log(level, f"a {level} line", logger="chatty")
    return "logged"

@mcp.tool
async def ask_name(ctx: Context) -> str:
    answer = await ctx.elicit(
        "What is your name?",
        {"type": "object", "properties": {"name": {"type": "string", "default": "Ada"}},
         "required": ["name"]},
    )
    return f"{answer.action}:{(answer.content or {}).get('name')}"

@mcp.tool
async def sign_in(ctx: Context) -> str:
    answer = await ctx.elicit_url("Please sign in", "https://example.com/login")
    return answer.action

@mcp.tool
async def ask_model(question: str, ctx: Context) -> str:
    result = await ctx.sample(question, max_tokens=50)
    return result["content"]["text"]

@mcp.tool
async def roots(ctx: Context) -> list[str]:
    return [r["uri"] for r in await ctx.list_roots()]

@mcp.tool
async def sleepy(ctx: Context) -> str:
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        ran.append("cancelled")
        raise
    return "woke"

@mcp.tool
def queued() -> str:
    ran.append("queued ran")
    return "ran"

@mcp.tool
def crunch() -> str:
    import time
    try:
        for _ in range(300):
            time.sleep(0.1)
    except KeyboardInterrupt:
        ran.append("interrupted")
        raise
    ran.append("finished")
    return "crunched"

@mcp.tool
def gallery():
    return [
        "three kinds:",
        Image(PNG),
        Audio(b"RIFF....WAVEfmt ", mime_type="audio/wav"),
        EmbeddedResource("memo://1", text="hello"),
        EmbeddedResource("memo://2", blob=b"\x00\x01", mime_type="application/octet-stream"),
        ResourceLink("df://sales", name="sales", mime_type="text/csv"),
        Blob(b"%PDF-1.4", "application/pdf"),
    ]

N_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

@mcp.tool(output_schema=N_SCHEMA)
def wrong_shape() -> dict:
    return {"n": "not a number"}

@mcp.tool
def explicit() -> ToolResult:
    return ToolResult(content=["partial"], structured={"rows": 3}, is_error=True)

memo = "first"
mcp.resource(var="memo", uri="memo://current")

@mcp.resource_template("files://{folder}/{name}", complete={"folder": ["docs", "data", "dist"]})
def files(folder: str, name: str) -> str:
    return f"{folder}/{name}"

def colors(prefix):
    return [c for c in ("red", "green", "grey") if c.startswith(prefix)]

mcp.prompt("pick", "Use {color}.", complete={"color": colors})
"""


@pytest.fixture(scope="module")
def served(kernel):
    return start_server(kernel, SETUP)


def wait_for_reply(kernel, message_id: str) -> None:
    while kernel.client.get_shell_msg(timeout=30)["parent_header"].get("msg_id") != message_id:
        pass


@MODES
async def test_progress_reaches_the_callback_in_order(served, mode):
    progress = Progress()
    async with connect(served, mode) as client:
        result = await client.call_tool("count_up", {"steps": 3}, progress_callback=progress)
    assert result.content[0].text == "counted"
    assert progress.seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_logging_honours_the_session_level(served):
    log = LogLines(check_schema=True)
    async with connect(served, "legacy", logging_callback=log) as client:
        await client.call_tool("chatty", {})
        await until(lambda: len(log.lines) >= 4, "four log lines")
        assert [level for level, _ in log.lines] == ["debug", "info", "warning", "error"]
        log.lines.clear()
        await client.set_logging_level("warning")
        await client.call_tool("chatty", {})
        # The lines came on the call's stream, before its result; the client hands each
        # to the callback in a task it starts in arrival order. A ping round-trip after
        # the result lets those tasks run, so a line of a filtered level would be here.
        await client.send_ping()
        assert log.lines == [("warning", "a warning line"), ("error", "a error line")]


async def test_logging_on_2026_only_for_requests_that_ask_for_it(served):
    await check_logging_only_when_asked(functools.partial(connect, served, "auto"))


@MODES
@pytest.mark.parametrize(
    "answer, expected",
    [
        (types.ElicitResult(action="accept", content={"name": "Grace"}), "accept:Grace"),
        (types.ElicitResult(action="decline"), "decline:None"),
        (types.ElicitResult(action="cancel"), "cancel:None"),
    ],
)
async def test_elicitation_accept_decline_cancel(served, mode, answer, expected):
    asked: list[dict] = []

    async def on_elicit(context, params):
        asked.append(dump(params))
        return answer

    async with connect(served, mode, elicitation_callback=on_elicit) as client:
        result = await client.call_tool("ask_name", {})
    assert result.content[0].text == expected
    assert asked[0]["message"] == "What is your name?"
    assert asked[0]["requestedSchema"]["properties"]["name"]["default"] == "Ada"


@MODES
async def test_url_mode_elicitation(served, mode):
    asked: list[dict] = []

    async def on_elicit(context, params):
        asked.append(dump(params))
        return types.ElicitResult(action="accept")

    async with connect(served, mode, elicitation_callback=on_elicit) as client:
        result = await client.call_tool("sign_in", {})
    assert result.content[0].text == "accept"
    assert asked[0]["mode"] == "url" and asked[0]["url"] == "https://example.com/login"
    # 2025-11-25 correlates by elicitationId; 2026-07-28 dropped it (the retry correlates).
    assert ("elicitationId" in asked[0]) == (mode == "legacy")


@MODES
async def test_sampling_and_roots_go_to_the_client(served, mode):
    async with connect(served, mode, **SAMPLING_AND_ROOTS) as client:
        await check_sampling_and_roots(client)


async def test_undeclared_client_features_are_a_clear_tool_error(served):
    async with connect(served, "legacy") as client:
        await check_undeclared_sampling(client)


async def test_cancelling_a_running_async_tool(served):
    served.kernel.run("ran.clear()")
    async with connect(served, "legacy") as client:
        with pytest.raises((asyncio.TimeoutError, TimeoutError)):
            await asyncio.wait_for(client.call_tool("sleepy", {}), 1.0)
        await until(lambda: served.kernel.eval("ran") == ["cancelled"], "the tool was cancelled")
        assert served.kernel.eval("[c.status for c in mcp.calls if c.target == 'sleepy'][-1]") == (
            "cancelled"
        )
        assert (await client.call_tool("queued", {})).content[0].text == "ran"


async def test_cancelling_a_running_sync_tool_stops_its_code(served):
    # Before, the call was recorded "cancelled" while its code ran on for 30 s and held
    # the kernel: the next call waited with nothing to say why.
    served.kernel.run("ran.clear()")
    async with connect(served, "legacy") as client:
        with pytest.raises((asyncio.TimeoutError, TimeoutError)):
            await asyncio.wait_for(client.call_tool("crunch", {}), 1.0)
        # In a thread, so that this loop sends the client's cancel meanwhile: the kernel
        # answers once the tool's code left its main thread (at its end, if not stopped).
        assert await asyncio.to_thread(served.kernel.eval, "ran") == ["interrupted"]
        assert served.kernel.eval("[c.status for c in mcp.calls if c.target == 'crunch'][-1]") == (
            "cancelled"
        )
        assert (await client.call_tool("queued", {})).content[0].text == "ran"


async def test_cancelling_a_call_queued_behind_a_cell_means_it_never_runs(served):
    served.kernel.run("ran.clear()")
    async with connect(served, "legacy") as client:
        message_id = served.kernel.client.execute("import time; print('busy'); time.sleep(3)")
        while True:  # wait until the cell runs, so that the call has to queue behind it
            output = served.kernel.client.get_iopub_msg(timeout=30)
            if (
                output["parent_header"].get("msg_id") == message_id
                and output["msg_type"] == "stream"
            ):
                break
        with pytest.raises((asyncio.TimeoutError, TimeoutError)):
            await asyncio.wait_for(client.call_tool("queued", {}), 0.5)
        # Wait for the cell without blocking this loop: the client's cancel must go out.
        await asyncio.to_thread(wait_for_reply, served.kernel, message_id)
        # A barrier: calls run on the kernel's thread in the order they came, so once a
        # second call has answered, the cancelled one has run already if it was going to.
        assert (await client.call_tool("queued", {})).content[0].text == "ran"
    assert served.kernel.eval("ran") == ["queued ran"]


@MODES
async def test_every_content_type_in_one_result(served, mode):
    async with connect(served, mode) as client:
        result = await client.call_tool("gallery", {})
    blocks = dump(result)["content"]
    validate(dump(result), "CallToolResult")
    assert [b["type"] for b in blocks] == [
        "text",
        "image",
        "audio",
        "resource",
        "resource",
        "resource_link",
        "resource",
    ]
    assert blocks[1]["mimeType"] == "image/png"
    assert base64.b64decode(blocks[1]["data"]).startswith(b"\x89PNG")
    assert blocks[2]["mimeType"] == "audio/wav"
    assert blocks[3]["resource"] == {"uri": "memo://1", "mimeType": "text/plain", "text": "hello"}
    assert base64.b64decode(blocks[4]["resource"]["blob"]) == b"\x00\x01"
    assert blocks[5]["uri"] == "df://sales"
    assert blocks[6]["resource"]["mimeType"] == "application/pdf"


async def test_results_that_break_their_output_schema_are_tool_errors(served):
    async with connect(served, "legacy") as client:
        wrong = await client.call_tool("wrong_shape", {})
        assert wrong.is_error and "output schema" in wrong.content[0].text
        explicit = await client.call_tool("explicit", {})
        assert explicit.is_error and explicit.structured_content == {"rows": 3}


async def test_subscribers_hear_when_a_cell_rebinds_the_variable(served, afterwards):
    updated, prompts_changed = asyncio.Event(), asyncio.Event()
    uris: list[str] = []

    async def on_message(message) -> None:
        if getattr(message, "method", None) == "notifications/resources/updated":
            uris.append(message.params.uri)
            updated.set()
        if getattr(message, "method", None) == "notifications/prompts/list_changed":
            prompts_changed.set()

    served.kernel.run('memo = "first"')
    async with connect(served, "legacy", message_handler=on_message) as client:
        assert (await client.read_resource("memo://current")).contents[0].text == "first"
        await client.subscribe_resource("memo://current")
        await until(lambda: served.kernel.eval(OPEN_GET_STREAMS) >= 1, "the client's GET stream")
        served.kernel.run('memo = "second"')
        await asyncio.wait_for(updated.wait(), 10)
        assert uris == ["memo://current"]
        assert (await client.read_resource("memo://current")).contents[0].text == "second"
        await client.unsubscribe_resource("memo://current")
        updated.clear()
        served.kernel.run('memo = "third"')
        # A barrier: the next cell changes the prompts. Notifications travel in order on
        # the one GET stream, so an update for "third" would arrive before that change.
        afterwards(served.kernel, 'mcp.remove("barrier")')
        served.kernel.run('mcp.prompt("barrier", "a barrier")')
        await asyncio.wait_for(prompts_changed.wait(), 10)
        assert not updated.is_set()
        with pytest.raises(MCPError) as unknown:
            await client.subscribe_resource("memo://nothing")
        assert unknown.value.code == -32002


async def test_a_2026_listen_stream_hears_when_a_cell_rebinds_the_variable(served):
    served.kernel.run('memo = "first"')
    async with connect(served, "auto") as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(resource_subscriptions=["memo://current"]) as subscription:
            served.kernel.run('memo = "second"')
            event = await asyncio.wait_for(subscription.__anext__(), 10)
            assert event.uri == "memo://current"
        assert (await client.read_resource("memo://current")).contents[0].text == "second"
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("memo://nothing")
        assert unknown.value.code == -32602  # 2026-07-28's code for an unknown resource
        assert unknown.value.error.data == {"uri": "memo://nothing"}


@MODES
async def test_completion_for_template_variables_and_prompt_arguments(served, mode):
    async with connect(served, mode) as client:
        folders = await client.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="files://{folder}/{name}"),
            {"name": "folder", "value": "d"},
        )
        assert folders.completion.values == ["docs", "data", "dist"]
        colors = await client.complete(
            types.PromptReference(type="ref/prompt", name="pick"), {"name": "color", "value": "gr"}
        )
        assert colors.completion.values == ["green", "grey"]
        validate(dump(colors), "CompleteResult")
        with pytest.raises(MCPError) as unknown:
            await client.complete(
                types.PromptReference(type="ref/prompt", name="nope"), {"name": "x", "value": ""}
            )
        assert unknown.value.code == -32602
