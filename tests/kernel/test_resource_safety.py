"""A hostile client against a real kernel: resource templates stay in their folder, and
error messages keep the machine's paths to themselves (issue 12.2)."""

from __future__ import annotations

import pytest

from tests.conftest import MODES, connect, start_server

SETUP = """
import pathlib, tempfile
base = pathlib.Path(tempfile.mkdtemp())
(base / "notes").mkdir()
(base / "notes" / "monday").write_text("gym")
(base / "secret").write_text("TOP SECRET")
(base / "files" / "a").mkdir(parents=True)
(base / "files" / "a" / "b.txt").write_text("bee")
asked = []

@mcp.resource_template("notes://{day}")
def notes(day: str) -> str:
    asked.append(day)
    return (base / "notes" / day).read_text()

@mcp.resource_template("files://{+path}")
def files(path: str) -> str:
    asked.append(path)
    return (base / "files" / path).read_text()

@mcp.resource_template("gone://{name}")
def gone(name: str) -> str:
    return open(f"/home/alice/private/{name}").read()

@mcp.tool
def load(name: str) -> str:
    return (base / "nowhere" / name).read_text()
"""

# Percent-encoded and raw, slash and backslash: none may reach the function.
TRAVERSALS = [
    "notes://..%2Fsecret",
    "notes://%2E%2E%2Fsecret",
    "notes://..%5Csecret",
    "files://../secret",
    "files://a/../../secret",
    "files://%2E%2E/secret",
    "files:///etc/passwd",
]


@pytest.fixture(scope="module")
def served(kernel):
    served = start_server(kernel, SETUP)
    yield served
    kernel.run("%mcp stop")


@MODES
async def test_templates_never_hand_a_function_a_way_out(served, mode):
    not_found = {"legacy": -32002, "auto": -32602}[mode]
    async with connect(served, mode) as client:
        assert (await client.read_resource("notes://monday")).contents[0].text == "gym"
        assert (await client.read_resource("files://a/b.txt")).contents[0].text == "bee"
        for uri in TRAVERSALS:
            with pytest.raises(Exception) as refused:
                await client.read_resource(uri)
            assert refused.value.code == not_found, uri
            assert refused.value.error.message == f"Resource not found: {uri}"
    assert served.kernel.eval("asked[-2:]") == ["monday", "a/b.txt"]
    assert "SECRET" not in str(served.kernel.eval("asked"))


@MODES
async def test_errors_name_no_path_of_the_kernel_machine(served, mode):
    base = served.kernel.eval("str(base)")
    async with connect(served, mode) as client:
        with pytest.raises(Exception) as failed:
            await client.read_resource("notes://tuesday")
        message = failed.value.error.message
        assert "FileNotFoundError" in message and "<path>" in message, message
        assert base not in message
        with pytest.raises(Exception) as failed:
            await client.read_resource("gone://x")
        assert "alice" not in failed.value.error.message
        result = await client.call_tool("load", {"name": "x.txt"})
        assert result.is_error
        assert base not in result.content[0].text and "<path>" in result.content[0].text
    # The notebook keeps the whole message.
    assert base in served.kernel.eval("str(mcp.calls[-1].error)")
