"""The sans-IO protocol core: ``await server.handle(message, session)``, no sockets.

Every reply the server produces is validated against the official MCP schema.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import InlineExecutor, Server, Session
from tests.schema import validate_reply

# -- helpers ---------------------------------------------------------------------------

INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
LATEST = "2025-11-25"

_ids = itertools.count(1)


def make_server(mcp: NotebookMCP | None = None, **options: Any) -> tuple[Server, NotebookMCP]:
    mcp = mcp or NotebookMCP()
    return Server(mcp.registry, **options), mcp


async def raw(server: Server, message: Any, session: Session | None = None) -> Any:
    """What ``handle`` returns for ``message``, unvalidated (may be None)."""
    return await server.handle(message, session or Session())


async def reply(
    server: Server,
    method: str,
    params: Any = None,
    session: Session | None = None,
    request_id: Any = None,
) -> dict:
    """The schema-valid reply to a request, with the request's id echoed."""
    request_id = next(_ids) if request_id is None else request_id
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    answer = await raw(server, message, session)
    assert answer is not None, f"no reply to {method}"
    validate_reply(method, answer)
    assert answer["id"] == request_id
    return answer


async def result(server: Server, method: str, params: Any = None, **kw: Any) -> dict:
    answer = await reply(server, method, params, **kw)
    assert "error" not in answer, answer
    return answer["result"]


async def error(server: Server, method: str, params: Any = None, **kw: Any) -> dict:
    answer = await reply(server, method, params, **kw)
    assert "error" in answer, answer
    return answer["error"]


async def invalid(server: Server, message: Any) -> dict:
    """The error for a malformed message; the reply must still be a valid error response."""
    answer = await raw(server, message)
    assert answer is not None, f"no reply to malformed {message!r}"
    validate_reply("ping", answer)
    assert "error" in answer, answer
    return answer


async def initialize(server: Server, session: Session, version: str = LATEST) -> dict:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "pytest", "version": "1.0"},
    }
    return await result(server, "initialize", params, session=session)


# -- invalid requests: -32600 ---------------------------------------------------------------


@pytest.mark.parametrize("message", [[], [{"jsonrpc": "2.0", "id": 1}], "ping", 7, None, True])
async def test_invalid_request_not_an_object(message):
    server, _ = make_server()
    answer = await invalid(server, message)
    assert answer["error"]["code"] == INVALID_REQUEST


@pytest.mark.parametrize(
    "message",
    [
        {"id": 1, "method": "ping"},
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": 2.0, "id": 1, "method": "ping"},
        {"jsonrpc": None, "id": 1, "method": "ping"},
    ],
)
async def test_invalid_request_wrong_jsonrpc(message):
    server, _ = make_server()
    answer = await invalid(server, message)
    assert answer["error"]["code"] == INVALID_REQUEST
    assert answer.get("id") == 1  # the id could be read, so it is echoed


@pytest.mark.parametrize("bad_id", [None, True, False, 1.5, [1], {"n": 1}])
async def test_invalid_request_bad_id_types(bad_id):
    server, _ = make_server()
    answer = await invalid(server, {"jsonrpc": "2.0", "id": bad_id, "method": "ping"})
    assert answer["error"]["code"] == INVALID_REQUEST
    assert "id" not in answer or answer["id"] not in (bad_id, None)


@pytest.mark.parametrize("method", [5, None, ["ping"], {"name": "ping"}])
async def test_invalid_request_non_string_method(method):
    server, _ = make_server()
    answer = await invalid(server, {"jsonrpc": "2.0", "id": 3, "method": method})
    assert answer["error"]["code"] == INVALID_REQUEST
    assert answer["id"] == 3


@pytest.mark.parametrize("params", [[1, 2], "x", 3, True])
async def test_invalid_request_non_object_params(params):
    server, _ = make_server()
    answer = await invalid(server, {"jsonrpc": "2.0", "id": 4, "method": "ping", "params": params})
    assert answer["error"]["code"] == INVALID_REQUEST
    assert answer["id"] == 4


async def test_invalid_request_neither_request_nor_response():
    server, _ = make_server()
    for message in [
        {"jsonrpc": "2.0", "id": 5},
        {"jsonrpc": "2.0", "id": 5, "result": {}, "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0"},
    ]:
        answer = await invalid(server, message)
        assert answer["error"]["code"] == INVALID_REQUEST, message


# -- unknown methods: -32601 ------------------------------------------------------------------


@pytest.mark.parametrize(
    "method",
    ["server/discover", "tools/unknown", "sampling/createMessage", "", "PING"],
)
async def test_unknown_methods_are_method_not_found(method):
    server, _ = make_server()
    err = await error(server, method, {})
    assert err["code"] == METHOD_NOT_FOUND
    assert not -32022 <= err["code"] <= -32020


async def test_server_discover_is_method_not_found_even_after_initialize():
    server, _ = make_server()
    session = Session()
    await initialize(server, session)
    err = await error(server, "server/discover", {}, session=session)
    assert err["code"] == METHOD_NOT_FOUND


# -- invalid params: -32602 -------------------------------------------------------------------


async def test_unknown_tool_is_invalid_params():
    server, mcp = make_server()
    mcp.tool(lambda: "x", name="known")
    err = await error(server, "tools/call", {"name": "unknown_tool", "arguments": {}})
    assert err["code"] == INVALID_PARAMS
    assert "unknown_tool" in err["message"]
    assert len(server.calls) == 0  # nothing ran


async def test_tools_call_without_a_string_name_is_invalid_params():
    server, _ = make_server()
    for params in [{}, {"name": 3}, {"name": None}]:
        err = await error(server, "tools/call", params)
        assert err["code"] == INVALID_PARAMS, params


@pytest.mark.parametrize("arguments", [[1, 2], "a=1", 5, True])
async def test_tools_call_non_object_arguments_is_invalid_params(arguments):
    server, mcp = make_server()
    ran = []
    mcp.tool(lambda a=1: ran.append(a), name="t")
    err = await error(server, "tools/call", {"name": "t", "arguments": arguments})
    assert err["code"] == INVALID_PARAMS
    assert ran == []


async def test_tools_call_arguments_not_matching_schema_is_tool_error():
    server, mcp = make_server()
    ran = []

    @mcp.tool
    def add(a: int, b: int) -> int:
        ran.append((a, b))
        return a + b

    for arguments in [{"a": "one", "b": 2}, {"a": 1}, {"a": 1, "b": 2, "c": 3}]:
        res = await result(server, "tools/call", {"name": "add", "arguments": arguments})
        assert res["isError"] is True, arguments
    assert ran == []
    ok = await result(server, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert ok["structuredContent"] == {"result": 3}


async def test_unknown_prompt_is_invalid_params():
    server, mcp = make_server()
    mcp.prompt("known", "hello")
    err = await error(server, "prompts/get", {"name": "nope"})
    assert err["code"] == INVALID_PARAMS
    assert "nope" in err["message"]


async def test_missing_prompt_argument_is_invalid_params_naming_it():
    server, mcp = make_server()
    mcp.prompt("letter", "Dear {recipient}, {body}", defaults={"body": "hi"})
    err = await error(server, "prompts/get", {"name": "letter", "arguments": {}})
    assert err["code"] == INVALID_PARAMS
    assert "recipient" in err["message"]
    assert "body" not in err["message"]
    err = await error(server, "prompts/get", {"name": "letter"})
    assert "recipient" in err["message"]


@pytest.mark.parametrize("arguments", [["x"], "x", {"recipient": 5}])
async def test_prompt_non_object_or_non_string_arguments_is_invalid_params(arguments):
    server, mcp = make_server()
    mcp.prompt("letter", "Dear {recipient}")
    err = await error(server, "prompts/get", {"name": "letter", "arguments": arguments})
    assert err["code"] == INVALID_PARAMS


@pytest.mark.parametrize(
    "method", ["tools/list", "resources/list", "resources/templates/list", "prompts/list"]
)
@pytest.mark.parametrize("cursor", ["not-a-cursor", "", "!!!", 12, {"o": 1}])
async def test_invalid_cursor_is_invalid_params(method, cursor):
    server, _ = make_server()
    err = await error(server, method, {"cursor": cursor})
    assert err["code"] == INVALID_PARAMS


async def test_cursor_of_another_listing_is_invalid_params():
    server, mcp = make_server(page_size=1)
    for i in range(3):
        mcp.tool(lambda: "x", name=f"t{i}")
    cursor = (await result(server, "tools/list"))["nextCursor"]
    err = await error(server, "prompts/list", {"cursor": cursor})
    assert err["code"] == INVALID_PARAMS


async def test_resources_read_without_uri_is_invalid_params():
    server, _ = make_server()
    err = await error(server, "resources/read", {})
    assert err["code"] == INVALID_PARAMS


# -- resources/read of an unknown URI: -32002 -------------------------------------------------


async def test_unknown_resource_is_resource_not_found_with_uri():
    server, mcp = make_server()
    mcp.resource("x", name="known", uri="data://known")
    mcp.resource_template("notes://{day}")(lambda day: day)
    for uri in ["data://unknown", "notes://a/b", "other://x"]:
        err = await error(server, "resources/read", {"uri": uri})
        assert err["code"] == RESOURCE_NOT_FOUND
        assert err["data"]["uri"] == uri


# -- notifications and responses --------------------------------------------------------------


@pytest.mark.parametrize(
    "method",
    [
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/unknown",
        "no/such/method",
        "ping",
        "tools/list",
    ],
)
async def test_notifications_are_never_answered(method):
    server, _ = make_server()
    assert await raw(server, {"jsonrpc": "2.0", "method": method}) is None
    assert await raw(server, {"jsonrpc": "2.0", "method": method, "params": {}}) is None


async def test_notification_for_a_request_method_does_not_run_user_code():
    server, mcp = make_server()
    ran = []
    mcp.tool(lambda: ran.append(1), name="effect")
    message = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "effect"}}
    assert await raw(server, message) is None
    assert ran == []
    assert len(server.calls) == 0


async def test_initialized_notification_marks_the_session():
    server, _ = make_server()
    session = Session()
    await initialize(server, session)
    assert session.initialized is False
    message = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert await raw(server, message, session) is None
    assert session.initialized is True


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": "abc", "result": {"roots": []}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "nope"}},
    ],
)
async def test_responses_from_the_client_are_ignored(message):
    server, _ = make_server()
    assert await raw(server, message) is None


# -- initialize -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
async def test_initialize_echoes_supported_versions(version):
    server, _ = make_server()
    session = Session()
    res = await initialize(server, session, version)
    assert res["protocolVersion"] == version
    assert session.protocol_version == version
    assert session.client_info == {"name": "pytest", "version": "1.0"}
    assert res["serverInfo"]["name"] == "mcp-notebook"


@pytest.mark.parametrize("version", ["2099-01-01", "2026-07-28", "1.0.0", "2024-01-01", ""])
async def test_initialize_unknown_version_offers_latest(version):
    server, _ = make_server()
    session = Session()
    res = await initialize(server, session, version)
    assert res["protocolVersion"] == LATEST
    assert session.protocol_version == LATEST


@pytest.mark.parametrize(
    "params",
    [
        {"capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
        {"protocolVersion": 20251125, "capabilities": {}},
        {"protocolVersion": None},
        {},
    ],
)
async def test_initialize_without_protocol_version_is_invalid_params(params):
    server, _ = make_server()
    session = Session()
    err = await error(server, "initialize", params, session=session)
    assert err["code"] == INVALID_PARAMS
    assert session.protocol_version is None


async def test_initialize_without_params_is_invalid_params():
    server, _ = make_server()
    err = await error(server, "initialize")
    assert err["code"] == INVALID_PARAMS


async def test_initialize_capabilities_list_changed_for_all_primitives():
    server, _ = make_server()
    capabilities = (await initialize(server, Session()))["capabilities"]
    for primitive in ("tools", "resources", "prompts"):
        assert capabilities[primitive]["listChanged"] is True, primitive


async def test_initialize_instructions_and_server_info():
    server, _ = make_server(name="my-notebook", version="9.9", instructions="Use the tools.")
    res = await initialize(server, Session())
    assert res["serverInfo"] == {"name": "my-notebook", "version": "9.9"}
    assert res["instructions"] == "Use the tools."
    plain, _ = make_server()
    assert "instructions" not in await initialize(plain, Session())


# -- ping -------------------------------------------------------------------------------------


async def test_ping_returns_empty_result():
    server, _ = make_server()
    assert await result(server, "ping") == {}
    assert await result(server, "ping", {}) == {}
    assert await result(server, "ping", request_id="string-id") == {}


# -- pagination -------------------------------------------------------------------------------


async def walk(server: Server, method: str, key: str) -> tuple[list[str], int]:
    """All names from every page of ``method``, and how many pages there were."""
    seen: list[str] = []
    params: dict[str, Any] = {}
    pages = 0
    while True:
        res = await result(server, method, params)
        pages += 1
        assert len(res[key]) <= server.page_size
        seen += [item["name"] for item in res[key]]
        if "nextCursor" not in res:
            return seen, pages
        assert isinstance(res["nextCursor"], str)
        params = {"cursor": res["nextCursor"]}
        assert pages < 100, "pagination does not end"


async def test_pagination_walks_all_tools_in_order_exactly_once():
    server, mcp = make_server()
    server.page_size = 100
    expected = [f"tool_{i:03d}" for i in range(250)]
    for tool_name in expected:
        mcp.tool(lambda: "x", name=tool_name)

    first = await result(server, "tools/list")
    assert len(first["tools"]) == 100
    assert "nextCursor" in first
    seen, pages = await walk(server, "tools/list", "tools")
    assert seen == expected
    assert pages == 3


async def test_pagination_of_resources_templates_and_prompts():
    server, mcp = make_server(page_size=7)
    resources = [f"r{i}" for i in range(20)]
    templates = [f"tpl{i}" for i in range(15)]
    prompts = [f"p{i}" for i in range(14)]
    for n in resources:
        mcp.resource("text", name=n)
    for n in templates:
        mcp.resource_template(f"{n}://{{x}}", name=n)(lambda x: x)
    for n in prompts:
        mcp.prompt(n, "hello")

    assert await walk(server, "resources/list", "resources") == (resources, 3)
    assert await walk(server, "resources/templates/list", "resourceTemplates") == (templates, 3)
    assert await walk(server, "prompts/list", "prompts") == (prompts, 2)


async def test_listing_that_fits_one_page_has_no_cursor():
    server, mcp = make_server()
    assert await result(server, "tools/list") == {"tools": []}
    mcp.tool(lambda: "x", name="only")
    res = await result(server, "tools/list")
    assert [t["name"] for t in res["tools"]] == ["only"]
    assert "nextCursor" not in res


# -- internal errors: -32603 ------------------------------------------------------------------


async def test_resource_reader_exception_is_internal_error():
    server, mcp = make_server()

    def broken() -> str:
        raise RuntimeError("disk on fire")

    mcp.resource(broken, name="broken", uri="data://broken")
    err = await error(server, "resources/read", {"uri": "data://broken"})
    assert err["code"] == INTERNAL_ERROR
    assert "disk on fire" in err["message"]
    assert "Traceback" not in err["message"]
    assert await result(server, "ping") == {}  # the server keeps working


async def test_resource_template_exception_is_internal_error():
    server, mcp = make_server()

    @mcp.resource_template("rows://{n}")
    def row(n: str) -> str:
        raise KeyError(n)

    err = await error(server, "resources/read", {"uri": "rows://7"})
    assert err["code"] == INTERNAL_ERROR


async def test_prompt_render_exception_is_internal_error():
    server, mcp = make_server()

    @mcp.prompt
    def broken(topic: str) -> str:
        raise ZeroDivisionError("no prompt today")

    err = await error(server, "prompts/get", {"name": "broken", "arguments": {"topic": "x"}})
    assert err["code"] == INTERNAL_ERROR
    assert "no prompt today" in err["message"]


class _BrokenRegistry:
    """A registry whose listings blow up: an unexpected error inside a handler."""

    @property
    def tools(self) -> dict:
        raise RuntimeError("registry exploded")

    prompts = property(tools.fget)
    resources = property(tools.fget)
    templates = property(tools.fget)


async def test_unexpected_handler_exception_is_internal_error():
    server = Server(_BrokenRegistry())  # type: ignore[arg-type]
    for method, params in [
        ("tools/list", {}),
        ("tools/call", {"name": "x"}),
        ("prompts/list", {}),
        ("resources/list", {}),
    ]:
        err = await error(server, method, params)
        assert err["code"] == INTERNAL_ERROR, method
    assert await result(server, "ping") == {}


async def test_tool_exception_is_a_tool_error_not_a_protocol_error():
    server, mcp = make_server()

    @mcp.tool
    def explode() -> str:
        raise RuntimeError("kaboom")

    res = await result(server, "tools/call", {"name": "explode"})
    assert res["isError"] is True
    assert "kaboom" in res["content"][0]["text"]


# -- call records -----------------------------------------------------------------------------


async def test_call_records_done_and_error():
    server, mcp = make_server()
    assert isinstance(server.executor, InlineExecutor)

    @mcp.tool
    def double(x: int) -> int:
        return 2 * x

    @mcp.tool
    def explode() -> str:
        raise RuntimeError("kaboom")

    session = Session()
    await initialize(server, session)
    await result(server, "tools/call", {"name": "double", "arguments": {"x": 4}}, session=session)
    await result(server, "tools/call", {"name": "explode", "arguments": {}}, session=session)

    assert len(server.calls) == 2
    done, failed = list(server.calls)
    assert (done.method, done.target, done.arguments, done.status) == (
        "tools/call",
        "double",
        {"x": 4},
        "done",
    )
    assert done.result["structuredContent"] == {"result": 8}
    assert done.duration is not None and done.duration >= 0
    assert done.client == "pytest 1.0"
    assert (failed.target, failed.status) == ("explode", "error")
    assert isinstance(failed.error, RuntimeError)
    assert "kaboom" in failed.traceback and "Traceback" in failed.traceback


async def test_call_records_for_resources_and_prompts():
    server, mcp = make_server()
    mcp.resource("ok", name="good", uri="data://good")
    mcp.resource(lambda: 1 / 0, name="bad", uri="data://bad")
    mcp.prompt("hello", "Hello {who}")

    await result(server, "resources/read", {"uri": "data://good"})
    await error(server, "resources/read", {"uri": "data://bad"})
    await result(server, "prompts/get", {"name": "hello", "arguments": {"who": "ada"}})

    records = [(r.method, r.target, r.status) for r in server.calls]
    assert records == [
        ("resources/read", "data://good", "done"),
        ("resources/read", "data://bad", "error"),
        ("prompts/get", "hello", "done"),
    ]
    assert isinstance(server.calls[1].error, ZeroDivisionError)


async def test_invalid_arguments_are_recorded_as_error():
    server, mcp = make_server()
    mcp.tool(lambda a: a, name="echo")
    await result(server, "tools/call", {"name": "echo", "arguments": {}})
    (record,) = server.calls
    assert record.status == "error"
    assert record.target == "echo"


async def test_set_level_accepts_rfc5424_levels_and_rejects_others():
    server, _ = make_server()
    session = Session()
    reply = await server.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "notice"}},
        session,
    )
    validate_reply("ping", reply)
    assert session.log_level == "notice"
    bad = await server.handle(
        {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "loud"}},
        session,
    )
    assert bad["error"]["code"] == -32602
    assert "loud" in bad["error"]["message"]
    assert session.log_level == "notice"


async def test_tool_and_resource_metadata_pass_through_to_the_listings():
    server, mcp = make_server()
    icons = [{"src": "https://example.com/i.png", "mimeType": "image/png", "sizes": ["48x48"]}]

    @mcp.tool(
        title="Adder",
        annotations={"readOnlyHint": True, "title": "Adder"},
        icons=icons,
        meta={"example.com/owner": "data-team"},
    )
    def add(a: int) -> int:
        """Add one."""
        return a + 1

    annotations = {
        "audience": ["assistant"],
        "priority": 0.5,
        "lastModified": "2026-11-29T10:00:00Z",
    }
    mcp.resource("text", name="notes", annotations=annotations, size=4, title="Notes")
    (tool,) = (await result(server, "tools/list"))["tools"]
    assert tool["title"] == "Adder"
    assert tool["annotations"] == {"readOnlyHint": True, "title": "Adder"}
    assert tool["icons"] == icons
    assert tool["_meta"] == {"example.com/owner": "data-team"}
    (resource,) = (await result(server, "resources/list"))["resources"]
    assert resource["annotations"] == annotations
    assert (resource["size"], resource["title"]) == (4, "Notes")


# -- values a client sends that must not reach a dict, a set or int() unchecked -----------
@pytest.mark.parametrize("request_id", [[1], {"a": 1}, None, True, 1.5])
async def test_a_cancel_whose_request_id_is_no_id_is_ignored_and_named(request_id):
    server, _ = make_server()
    session = Session()
    await initialize(server, session)
    message = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id},
    }
    assert await raw(server, message, session) is None  # was TypeError: unhashable
    problem = server.notification_problem(message)
    assert problem is not None and problem.code == -32602
    assert "requestId" in problem.message
    assert (await result(server, "ping", session=session)) == {}


@pytest.mark.parametrize(
    "cursor", [[1], {"k": "tools", "o": 1}, "eyJrIjoidG9vbHMiLCJvIjp0cnVlfQ", "W1tbW1tbXV1dXV1d"]
)
async def test_an_odd_cursor_is_invalid_params_and_not_echoed_unless_a_string(cursor):
    server, _ = make_server()
    err = await error(server, "tools/list", {"cursor": cursor})
    assert err["code"] == -32602 and err["message"] == "Invalid cursor"
    assert err.get("data") == ({"cursor": cursor} if isinstance(cursor, str) else None)
