"""Confirmations: a real kernel, the official SDK client calling, clicks sent as comm messages.

Every test asserts what the client got and, through a side effect in the kernel (``ran``),
whether the function ran.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import mcp_types as types
import nbformat
import pytest
from pydantic import TypeAdapter

from tests.conftest import Served, connect, start_server
from tests.kernel.frontend import Frontend
from tests.kernels import KernelError
from tests.schema import validate
from tests.serving import ServeProcess
from tests.sources import ADD_BARE

RELATED_TASK = "io.modelcontextprotocol/related-task"
NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "confirmations.ipynb"

SETUP = (
    r'''
ran = []

@mcp.tool(confirm=True)
def delete_rows(table: str, limit: int = 10) -> str:
    """Delete rows from a table."""
    ran.append([table, limit])
    return f"deleted {limit} rows from {table}"

'''
    + ADD_BARE
    + r"""
@mcp.tool(annotations={"destructiveHint": True})
def wipe() -> str:
    ran.append(["wipe"])
    return "wiped"
"""
)


@pytest.fixture(scope="module")
def served(kernel, frontend):
    return start_server(kernel, SETUP)


@pytest.fixture(autouse=True)
def fresh(served):
    served.kernel.run("ran.clear(); mcp.confirm_policy = 'marked'; mcp.confirm_timeout = 120")


async def pending_panel(frontend: Frontend) -> dict[str, str]:
    panels = await frontend.until(frontend.pending_panels)
    return frontend.panel(panels[-1])


def status_of_last(served, target: str) -> str:
    return served.kernel.eval(f"[c.status for c in mcp.calls if c.target == {target!r}][-1]")


async def test_approve_under_the_start_cell_when_no_monitor_is_open(served, frontend):
    area = frontend.one("VBox", "mcp-prompts")  # displayed by the cell that ran %mcp start
    async with connect(served, "legacy") as client:
        call = asyncio.ensure_future(client.call_tool("delete_rows", {"table": "orders"}))
        panel = await pending_panel(frontend)
        assert frontend.children(area) == [panel["id"]]
        title = frontend.state(panel["title"])["value"]
        assert "delete_rows" in title and "Delete rows from a table." in title
        assert json.loads(frontend.state(panel["editor"])["value"]) == {"table": "orders"}
        assert served.kernel.eval("ran") == []  # it waits for the person
        assert status_of_last(served, "delete_rows") == "awaiting confirmation"
        frontend.click(panel["approve"])
        result = await call
    assert not result.is_error
    assert result.content[0].text == "deleted 10 rows from orders"
    assert served.kernel.eval("ran") == [["orders", 10]]
    assert status_of_last(served, "delete_rows") == "done"
    await frontend.until(lambda: frontend.children(area) == [])


async def test_deny_is_a_declined_tool_error_and_the_function_never_runs(served, frontend):
    async with connect(served, "auto") as client:
        call = asyncio.ensure_future(client.call_tool("delete_rows", {"table": "orders"}))
        frontend.click((await pending_panel(frontend))["deny"])
        result = await call
    assert result.is_error
    assert "declined" in result.content[0].text and "delete_rows" in result.content[0].text
    assert served.kernel.eval("ran") == []
    assert status_of_last(served, "delete_rows") == "denied"


async def test_edited_arguments_are_validated_again_then_used(served, frontend):
    async with connect(served, "legacy") as client:
        call = asyncio.ensure_future(client.call_tool("delete_rows", {"table": "orders"}))
        panel = await pending_panel(frontend)

        async def note_after(text: str) -> str:
            frontend.edit(panel["editor"], value=text)
            before = frontend.state(panel["note"])["value"]
            frontend.click(panel["approve"])
            return await frontend.until(
                lambda: (v := frontend.state(panel["note"])["value"]) != before and v
            )

        assert "Not valid JSON" in await note_after('{"table": ')
        assert "Invalid argument 'limit'" in await note_after('{"table": "t", "limit": "ten"}')
        assert "JSON object" in await note_after("[1, 2]")
        assert not call.done() and served.kernel.eval("ran") == []  # still waiting
        frontend.edit(panel["editor"], value='{"table": "archive", "limit": 3}')
        frontend.click(panel["approve"])
        result = await call
    assert result.content[0].text == "deleted 3 rows from archive"
    assert served.kernel.eval("ran") == [["archive", 3]]
    assert served.kernel.eval("mcp.calls[-1].arguments") == {"table": "archive", "limit": 3}


async def test_an_edit_after_its_subshell_is_deleted_still_counts(served, frontend):
    # JupyterLab sends a widget's messages on a subshell and may delete it (one per comm):
    # the kernel's echo of an edit there must not bind the editor to it.
    async with connect(served, "legacy") as client:
        call = asyncio.ensure_future(client.call_tool("delete_rows", {"table": "orders"}))
        panel = await pending_panel(frontend)
        subshell = frontend.subshell(served.kernel)
        first = '{"table": "first"}'
        frontend.send(panel["editor"], {"method": "update", "state": {"value": first},
                                        "buffer_paths": []}, subshell=subshell)  # fmt: skip
        assert await frontend.until(lambda: served.kernel.eval(EDITOR) == first)
        frontend.subshell(served.kernel, "delete", subshell)
        frontend.edit(panel["editor"], value='{"table": "second"}')
        await frontend.until(lambda: served.kernel.eval(EDITOR) == '{"table": "second"}')
        frontend.click(panel["approve"])
        result = await asyncio.wait_for(call, 30)
    assert result.content[0].text == "deleted 10 rows from second"


EDITOR = "[p.editor.value for p in mcp.ui.panels.values()][-1]"


async def test_timeout_denies_and_a_late_approval_is_refused(served, frontend):
    served.kernel.run("%mcp confirm --timeout 1")
    async with connect(served, "legacy") as client:
        call = asyncio.ensure_future(client.call_tool("delete_rows", {"table": "orders"}))
        panel = await pending_panel(frontend)
        result = await call
        assert result.is_error
        # Nobody declined it: the client is told nobody answered.
        assert result.content[0].text == (
            "Tool 'delete_rows' was not run: nobody approved it within 1 s."
        )
        await frontend.until(lambda: frontend.state(panel["approve"]).get("disabled"))
        frontend.click(panel["approve"])  # as a front end that missed the update would
        note = await frontend.until(
            lambda: "Too late" in (v := frontend.state(panel["note"])["value"]) and v
        )
    assert "timed out" in note
    assert served.kernel.eval("ran") == []
    assert status_of_last(served, "delete_rows") == "denied"


async def test_a_waiting_call_blocks_no_cell_no_other_call_and_no_list(served, frontend):
    async with connect(served, "legacy") as client:
        call = asyncio.ensure_future(client.call_tool("delete_rows", {"table": "orders"}))
        panel = await pending_panel(frontend)
        _, output = served.kernel.run("x = 40 + 2\nprint(x)")
        assert output.strip() == "42"
        assert "add" in [t.name for t in (await client.list_tools()).tools]
        assert (await client.call_tool("add", {"a": 1, "b": 2})).content[0].text == "3"
        assert not call.done()
        frontend.click(panel["approve"])
        assert (await call).content[0].text == "deleted 10 rows from orders"


async def test_a_busy_cell_delays_the_prompt_but_not_the_control_plane(served, frontend):
    kernel = served.kernel
    async with connect(served, "legacy") as client:
        message_id = kernel.client.execute("import time; print('busy'); time.sleep(2)")
        call = asyncio.ensure_future(client.call_tool("delete_rows", {"table": "orders"}))
        # While the cell runs: the server still answers, and the call is on record.
        assert "delete_rows" in [t.name for t in (await client.list_tools()).tools]
        await asyncio.to_thread(_wait_for_reply, kernel, message_id)
        frontend.click((await pending_panel(frontend))["approve"])
        assert (await call).content[0].text == "deleted 10 rows from orders"


def _wait_for_reply(kernel, message_id: str) -> None:
    while kernel.client.get_shell_msg(timeout=30)["parent_header"].get("msg_id") != message_id:
        pass


async def test_cancelling_a_waiting_call_withdraws_the_prompt(served, frontend):
    async with connect(served, "legacy") as client:
        call = asyncio.ensure_future(client.call_tool("delete_rows", {"table": "orders"}))
        panel = await pending_panel(frontend)
        call.cancel()  # the SDK sends notifications/cancelled
        await frontend.until(lambda: frontend.state(panel["approve"]).get("disabled"))
        frontend.click(panel["approve"])
        await frontend.until(lambda: "Too late" in frontend.state(panel["note"])["value"])
        assert (await client.call_tool("add", {"a": 2, "b": 2})).content[0].text == "4"
    assert served.kernel.eval("ran") == []
    assert status_of_last(served, "delete_rows") == "cancelled"


async def test_every_open_monitor_shows_the_prompt(served, frontend):
    kernel = served.kernel
    before = set(frontend.find("VBox", "mcp-monitor"))
    kernel.run("m1 = mcp.monitor()\nm2 = mcp.monitor()\ndisplay(m1, m2)")

    def both() -> set[str] | None:  # their comm_opens may arrive one by one
        found = set(frontend.find("VBox", "mcp-monitor")) - before
        return found if len(found) >= 2 else None

    monitors = await frontend.until(both)
    assert len(monitors) == 2
    pending_boxes = [frontend.children(m)[1] for m in monitors]
    try:
        async with connect(served, "legacy") as client:
            call = asyncio.ensure_future(client.call_tool("delete_rows", {"table": "x"}))
            panel = await pending_panel(frontend)
            for box in pending_boxes:
                await frontend.until(lambda box=box: frontend.children(box) == [panel["id"]])
            # ...and pinned under the cell that started the server too: one card, one answer.
            prompts = frontend.one("VBox", "mcp-prompts")
            assert frontend.children(prompts) == [panel["id"]]
            frontend.click(panel["approve"])
            assert (await call).content[0].text == "deleted 10 rows from x"
        for box in [*pending_boxes, prompts]:
            await frontend.until(lambda box=box: frontend.children(box) == [])
    finally:
        kernel.run("m1.close(); m2.close()")


async def expect_prompt(served, frontend, client, tool: str, arguments: dict) -> None:
    call = asyncio.ensure_future(client.call_tool(tool, arguments))
    frontend.click((await pending_panel(frontend))["deny"])
    assert (await call).is_error


async def test_policies_from_the_magic(served, frontend):
    kernel = served.kernel
    async with connect(served, "legacy") as client:
        _, said = kernel.run("%mcp confirm destructive")
        assert "destructive" in said and "delete_rows, wipe" in said
        await expect_prompt(served, frontend, client, "wipe", {})
        assert (await client.call_tool("add", {"a": 1, "b": 1})).content[0].text == "2"

        kernel.run("%mcp confirm add")
        await expect_prompt(served, frontend, client, "add", {"a": 1, "b": 1})
        assert (await client.call_tool("wipe", {})).content[0].text == "wiped"

        _, said = kernel.run("%mcp confirm none")
        assert "Tools that ask first: none" in said
        assert not (await client.call_tool("delete_rows", {"table": "t"})).is_error

        kernel.run("%mcp confirm all")
        await expect_prompt(served, frontend, client, "add", {"a": 1, "b": 1})
    assert kernel.eval("ran") == [["wipe"], ["t", 10]]


@pytest.mark.parametrize(
    "line, message",
    [
        ("%mcp confirm all add", "policy of its own"),
        ("%mcp confirm --timeout 0", "must be a positive number of seconds"),
        ("%mcp confirm --timeout nan", "must be a positive number of seconds"),
        ("%mcp confirm --timeout inf", "must be a positive number of seconds"),
        ("%mcp confirm --timeout soon", "invalid float value"),
    ],
)
def test_bad_policy_input_is_a_usage_error(served, line, message):
    with pytest.raises(KernelError) as error:
        served.kernel.run(line)
    assert error.value.ename == "UsageError" and message in error.value.evalue
    assert served.kernel.eval("mcp.confirm_policy") == "marked"


# -- headless: `mcp-notebook serve`, nobody at the notebook --------------------------------
HEADLESS = """\
%load_ext mcp_notebook

@mcp.tool(confirm=True)
def delete_rows(table: str) -> str:
    return f"deleted rows from {table}"
"""


@pytest.fixture(scope="module")
def headless(tmp_path_factory):
    path = tmp_path_factory.mktemp("headless") / "guarded.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(HEADLESS)]), path)
    # --confirm elicit: the client's user is asked (deny is the default, see below).
    process = ServeProcess(str(path), "--port", "0", "--token", "t0ken", "--confirm", "elicit")
    yield Served(kernel=None, url=process.wait_for_url(), token="t0ken")
    process.stop()


@pytest.mark.parametrize(
    "answer, expected",
    [
        (types.ElicitResult(action="accept", content={}), "deleted rows from orders"),
        (types.ElicitResult(action="decline"), "declined"),
        (types.ElicitResult(action="cancel"), "declined"),
    ],
)
async def test_headless_asks_the_clients_user_through_elicitation(headless, answer, expected):
    asked: list[str] = []

    async def on_elicit(context, params):
        asked.append(params.message)
        return answer

    async with connect(headless, "legacy", elicitation_callback=on_elicit) as client:
        result = await client.call_tool("delete_rows", {"table": "orders"})
    assert expected in result.content[0].text
    assert result.is_error == (answer.action != "accept")
    assert "delete_rows" in asked[0] and '"table": "orders"' in asked[0]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_headless_without_a_way_to_ask_denies_and_says_how_to_allow(headless, mode):
    async with connect(headless, mode) as client:  # no elicitation callback: not declared
        result = await client.call_tool("delete_rows", {"table": "orders"})
    assert result.is_error
    text = result.content[0].text
    assert "needs the user's confirmation" in text and "%mcp confirm none" in text


async def test_headless_a_confirm_task_is_input_required_while_the_clients_user_is_asked(
    headless,
):
    """2025-11-25 tasks: the question names its task (related-task), and the task says
    it waits for the client's user, not for a notebook nobody has open."""
    dump = TypeAdapter(dict[str, Any])
    seen: dict[str, Any] = {}

    async def on_elicit(context, params):
        seen["question"] = params.model_dump(by_alias=True, exclude_none=True, mode="json")
        related = (params.meta or {}).get(RELATED_TASK) or {}
        get = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=related["taskId"]))
        seen["while_asked"] = await client.session.send_request(get, dump)
        return types.ElicitResult(action="accept", content={})

    async with connect(headless, "legacy", elicitation_callback=on_elicit) as client:
        arguments = {"table": "orders"}
        call = types.CallToolRequest(
            params=types.CallToolRequestParams(
                name="delete_rows", arguments=arguments, task=types.TaskMetadata()
            )
        )
        created = validate(
            # This SDK has no 2025-11-25 task API: its typed tools/call expects a
            # CallToolResult. The raw request goes through its dispatcher (same session).
            await client.session._dispatcher.send_raw_request(
                "tools/call", call.params.model_dump(by_alias=True, exclude_none=True), {}
            ),
            "CreateTaskResult",
            "2025-11-25",
        )
        task_id = created["task"]["taskId"]
        payload = types.GetTaskPayloadRequest(
            params=types.GetTaskPayloadRequestParams(task_id=task_id)
        )
        result = await client.session.send_request(payload, dump)  # waits for the end
    question = validate(seen["question"], "ElicitRequestFormParams", "2025-11-25")
    assert question["_meta"][RELATED_TASK] == {"taskId": task_id}
    assert "delete_rows" in question["message"]
    asked = validate(seen["while_asked"], "GetTaskResult", "2025-11-25")
    assert asked["status"] == "input_required"
    assert "client's user" in asked["statusMessage"]
    assert "notebook" not in asked["statusMessage"]
    assert validate(result, "CallToolResult", "2025-11-25")["content"][0]["text"] == (
        "deleted rows from orders"
    )


async def test_the_confirmations_notebook_serves_headless():
    process = ServeProcess(str(NOTEBOOK), "--port", "0", "--token", "t0ken")
    try:
        served = Served(kernel=None, url=process.wait_for_url(), token="t0ken")
        async with connect(served, "legacy") as client:
            assert (await client.call_tool("count_rows", {"table": "orders"})).content[
                0
            ].text == "9"
            refused = await client.call_tool("drop_rows", {"table": "orders", "status": "open"})
            assert refused.is_error and "--confirm elicit" in refused.content[0].text
            assert (await client.call_tool("count_rows", {"table": "orders"})).content[
                0
            ].text == "9"
    finally:
        process.stop()
    assert "<mcp monitor" in "".join(process.stderr)  # its display, as text, not a dump


# -- approvals as tasks: no request is held open while a person decides ----------------
def tasks_client(served):
    from tests.kernel.test_tasks import Tasks

    return Tasks(served.url, served.token)


def created_task(client, table: str) -> dict:
    created = client.result("tools/call", {"name": "delete_rows", "arguments": {"table": table}})
    assert created["resultType"] == "task", created
    return created


async def test_a_confirmation_as_a_task_completes_only_after_approve(served, frontend):
    client = tasks_client(served)
    created = created_task(client, "orders")
    panel = await pending_panel(frontend)
    task = client.result("tasks/get", {"taskId": created["taskId"]})
    assert task["status"] == "working"
    assert task["statusMessage"] == "waiting for approval in the notebook"
    assert served.kernel.eval("ran") == []  # never before Approve
    frontend.click(panel["approve"])
    done = client.until_terminal(created["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "deleted 10 rows from orders"
    assert served.kernel.eval("ran") == [["orders", 10]]


async def test_a_denied_task_fails_with_the_reason_and_nothing_ran(served, frontend):
    client = tasks_client(served)
    created = created_task(client, "users")
    frontend.click((await pending_panel(frontend))["deny"])
    done = client.until_terminal(created["taskId"])
    assert done["status"] == "failed" and "declined" in done["error"]["message"]
    assert "result" not in done
    assert served.kernel.eval("ran") == []
    assert status_of_last(served, "delete_rows") == "denied"


async def test_an_unanswered_task_is_denied_by_the_timeout(served, frontend):
    served.kernel.run("mcp.confirm_timeout = 0.5")
    client = tasks_client(served)
    created = created_task(client, "logs")
    done = client.until_terminal(created["taskId"])
    assert done["status"] == "failed" and "within 0.5 s" in done["error"]["message"]
    assert served.kernel.eval("ran") == []
