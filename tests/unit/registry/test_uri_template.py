"""Resource templates never hand a function a value that steps out of its folder (issue 12.2).

What reaches the function is documented in docs/reference/components.md ("Resource templates") and
docs/security.md; these tests are that table.
"""

from __future__ import annotations

import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.registry.redact import redact
from mcp_notebook.registry.uri_template import UriTemplate
from tests.unit.registry.test_registry import reply_to, rpc


# -- {var}: one value, never a path ----------------------------------------------------------
@pytest.mark.parametrize(
    "uri, day",
    [
        ("notes://monday", "monday"),
        ("notes://2024-01-02", "2024-01-02"),
        ("notes://a%20b", "a b"),
        ("notes://caf%C3%A9", "café"),
        ("notes://what%3F", "what?"),
        ("notes://...", "..."),
        ("notes://.hidden", ".hidden"),
        ("notes://a..b", "a..b"),
        ("notes://%252F", "%2F"),  # decoded once: the function sees the literal text
    ],
)
def test_simple_variable_values_are_decoded_once(uri, day):
    assert UriTemplate("notes://{day}").match(uri) == {"day": day}


@pytest.mark.parametrize(
    "uri",
    [
        "notes://..%2Fsecret",  # the reported traversal
        "notes://..%2fsecret",
        "notes://%2E%2E%2Fsecret",
        "notes://..",
        "notes://.",
        "notes://%2E%2E",
        "notes://.%2e",
        "notes://a%2Fb",
        "notes://%2Fetc%2Fpasswd",
        "notes://..%5Csecret",  # a backslash: a separator on Windows
        "notes://..\\secret",
        "notes://a%00.txt",
        "notes://%FF",  # not UTF-8
        "notes://../secret",
        "notes://a/b",
    ],
)
def test_simple_variable_never_carries_a_path(uri):
    assert UriTemplate("notes://{day}").match(uri) is None


def test_label_and_multi_value_expressions_are_simple_values_too():
    assert UriTemplate("f://x{.ext}").match("f://x.txt") == {"ext": "txt"}
    assert UriTemplate("f://x{.ext}").match("f://x.%2E%2E") is None
    assert UriTemplate("m://{a,b}").match("m://1,2") == {"a": "1", "b": "2"}
    assert UriTemplate("m://{a,b}").match("m://1,%2E%2E") is None


# -- {+var} and {/var}: relative paths without dot-segments -------------------------------
@pytest.mark.parametrize("template", ["files://{+path}", "files://root{/path}"])
def test_path_variables_carry_relative_paths(template):
    prefix = "files://" if "+" in template else "files://root/"
    assert UriTemplate(template).match(prefix + "a/b/c.txt") == {"path": "a/b/c.txt"}
    assert UriTemplate(template).match(prefix + "a%2Fb") == {"path": "a/b"}
    assert UriTemplate(template).match(prefix + "a/.hidden/b..c") == {"path": "a/.hidden/b..c"}


@pytest.mark.parametrize("template", ["files://{+path}", "files://root{/path}"])
@pytest.mark.parametrize(
    "tail",
    [
        "../secret",
        "a/../../secret",
        "a/..",
        "..",
        "./a",
        "a/./b",
        "%2E%2E/secret",
        "a/%2e%2e/%2e%2e/secret",
        "/etc/passwd",  # absolute: os.path.join(base, value) would drop base
        "%2Fetc%2Fpasswd",
        "a\\..\\..\\secret",
        "a%5C..%5Csecret",
        "a%00",
        "%C3",
    ],
)
def test_path_variables_never_leave_their_folder(template, tail):
    prefix = "files://" if "+" in template else "files://root/"
    assert UriTemplate(template).match(prefix + tail) is None


def test_query_values_decode_as_query_values():
    template = UriTemplate("df://sales{?offset,columns}")
    assert template.match("df://sales?offset=10&columns=a%2Cb+c") == {
        "offset": "10",
        "columns": "a,b c",
    }
    # A query value is data, not a path segment: anything goes, decoded once.
    assert template.match("df://sales?columns=../x%2Fy") == {"columns": "../x/y"}
    assert template.match("df://sales?columns=%FF") is None  # not UTF-8
    assert template.match("df://sales?other=1") == {}


# -- through resources/read: a refused URI is an unknown resource --------------------------
async def test_a_traversing_uri_is_resource_not_found_and_the_function_never_runs(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "monday").write_text("gym")
    (tmp_path / "secret").write_text("TOP SECRET")
    mcp = NotebookMCP()
    seen = []

    @mcp.resource_template("notes://{day}")
    def notes(day: str) -> str:
        seen.append(day)
        return (folder / day).read_text()

    assert (await rpc(mcp, "resources/read", {"uri": "notes://monday"}))["contents"][0][
        "text"
    ] == "gym"
    for uri in ("notes://..%2Fsecret", "notes://%2E%2E%2Fsecret", "notes://..%5Csecret"):
        reply = await reply_to(mcp, "resources/read", {"uri": uri})
        assert reply["error"]["code"] == -32002, reply
        assert reply["error"]["message"] == f"Resource not found: {uri}"
        assert "SECRET" not in str(reply)
    assert seen == ["monday"]


# -- error messages keep the machine's paths to themselves --------------------------------
async def test_reader_errors_do_not_send_absolute_paths(tmp_path):
    mcp = NotebookMCP()
    missing = tmp_path / "alice" / "secret" / "x.csv"

    @mcp.resource_template("notes://{day}")
    def notes(day: str) -> str:
        return missing.read_text()  # FileNotFoundError naming the absolute path

    @mcp.tool
    def load(name: str) -> str:
        raise FileNotFoundError(f"/home/alice/secret/{name}")

    @mcp.prompt
    def brief(topic: str) -> str:
        return open(f"{tmp_path}/prompts/{topic}.txt").read()

    reply = await reply_to(mcp, "resources/read", {"uri": "notes://monday"})
    message = reply["error"]["message"]
    assert "FileNotFoundError" in message and "<path>" in message, message
    assert str(tmp_path) not in message and "alice" not in message

    result = await rpc(mcp, "tools/call", {"name": "load", "arguments": {"name": "x"}})
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text == "FileNotFoundError: <path>", text

    reply = await reply_to(mcp, "prompts/get", {"name": "brief", "arguments": {"topic": "t"}})
    assert str(tmp_path) not in reply["error"]["message"]
    assert "<path>" in reply["error"]["message"]


@pytest.mark.parametrize(
    "message, expected",
    [
        ("[Errno 2] No such file: '/home/alice/x'", "[Errno 2] No such file: '<path>'"),
        ("missing /srv/data/2024/sales.csv", "missing <path>"),
        ("C:\\Users\\bob\\notes.txt not found", "<path> not found"),
        ("see file:///home/bob/x", "see file://<path>"),
        # Not paths: left alone.
        ("Resource not found: notes://a/b", "Resource not found: notes://a/b"),
        ("expected int/str, got 1/2", "expected int/str, got 1/2"),
        (
            "see https://errors.pydantic.dev/2.11/v/int",
            "see https://errors.pydantic.dev/2.11/v/int",
        ),
        ("ZeroDivisionError: division by zero", "ZeroDivisionError: division by zero"),
    ],
)
def test_redact(message, expected):
    assert redact(message) == expected
