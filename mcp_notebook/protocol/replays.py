"""Recorded calls -> a pytest file that replays them and checks the results.

``mcp.calls.to_pytest(path, calls=...)`` (and ``%mcp record save``) write it; the file
starts the server as a client config would (``mcp-notebook serve NOTEBOOK --transport
stdio``, or ``$MCP_REPLAY_COMMAND``, e.g. an export's ``python -m PACKAGE``), replays each
tool call, resource read, prompt get and skills/get through the official ``mcp`` SDK
client, and compares with :func:`assert_matches`: text and JSON exactly, floats within a relative
1e-6, images by type, MIME type and size (pixels of a PNG, else bytes within 25%).
Pure: no I/O here but the text it returns.
"""

from __future__ import annotations

import base64
import json
import math
import ntpath
import sys
from collections.abc import Iterable
from typing import Any

from ..registry.pictures import png_size

REPLAYED = ("tools/call", "resources/read", "prompts/get", "skills/get")
# What the generated file compares, per method (the rest, e.g. _meta, may vary by run).
COMPARED = {
    "tools/call": ("content", "structuredContent", "isError"),
    "resources/read": ("contents",),
    "prompts/get": ("messages",),
    "skills/get": ("skill",),  # the manifest: a skill's files, digests and sizes
}
FLOAT_TOLERANCE = 1e-6
IMAGE_BYTES_TOLERANCE = 0.25
# Windows' device names: "con" (and up to Windows 10 "NUL.py" too) opens the device, in
# any folder.
WINDOWS_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL"}
    | {
        f"{port}{n}"
        for port in ("COM", "LPT")
        for n in (*"123456789", "\u00b9", "\u00b2", "\u00b3")
    }
)


def windows_name_problem(path: str, windows: bool | None = None) -> str | None:
    """Why Windows would not write a file at ``path`` where it says, or None.

    What fails there (``?``, ``*``, a path too long) is an ``OSError`` anyway; these are
    written without a word to somewhere else: a device name (``nul.py`` writes nowhere), a
    ``:`` after the drive (a drive-relative path, or an NTFS stream of another file), a
    name ending in a dot or a space (Windows drops them). On other systems: None."""
    if not (sys.platform == "win32" if windows is None else windows):
        return None
    _, rest = ntpath.splitdrive(path)
    for part in rest.replace("/", "\\").split("\\"):
        if part in ("", ".", ".."):
            continue
        if ":" in part:
            return f"{part!r}: Windows reads ':' as a drive or a file's stream"
        if part.split(".", 1)[0].rstrip(" ").upper() in WINDOWS_DEVICES:
            return f"{part!r} is a device name on Windows"
        if part.endswith((".", " ")):
            return f"{part!r}: Windows drops a name's last dots and spaces"
    return None


def replays(records: Iterable[Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The replayable calls among ``records`` (``CallRecord``\\s), and why others were
    skipped: not done, not one of REPLAYED, or kept abbreviated by the history limits."""
    chosen: list[dict[str, Any]] = []
    skipped: list[str] = []
    for record in records:
        label = f"call {record.id} ({record.method} {record.target})"
        if record.method not in REPLAYED:
            skipped.append(f"{label}: {record.method} is not replayed")
        elif record.status != "done" or not isinstance(record.result, dict):
            skipped.append(f"{label}: it ended {record.status}")
        elif record.abbreviated & {"arguments", "result"}:
            skipped.append(f"{label}: the history kept it abbreviated")
        else:
            expected = {k: record.result[k] for k in COMPARED[record.method] if k in record.result}
            chosen.append(
                {
                    "method": record.method,
                    "target": record.target,
                    "arguments": record.arguments,
                    "expected": expected,
                }
            )
    return chosen, skipped


def pytest_source(
    calls: list[dict[str, Any]], skipped: list[str], notebook: str | None, version: str
) -> str:
    """The text of the pytest file replaying ``calls`` (from :func:`replays`)."""
    # A reason quotes what a client sent (a resource URI may hold a line break): escaped,
    # it stays inside its comment instead of becoming code of the generated file.
    notes = "".join(f"#   {one_line(reason)}\n" for reason in skipped) or "#   none\n"
    return f'''"""Regression tests: {len(calls)} recorded calls replayed, by mcp-notebook {version}.

The server: $MCP_REPLAY_COMMAND (e.g. "python -m my_export"), else
`mcp-notebook serve NOTEBOOK --transport stdio` for $MCP_REPLAY_NOTEBOOK or the notebook
below. Results are compared by mcp_notebook.protocol.replays.assert_matches.
"""

import asyncio
import json
import os
import sys

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from mcp_notebook.commandline import split
from mcp_notebook.protocol.replays import assert_matches, dumped

NOTEBOOK = {notebook!r}
# Not replayed:
{notes}CALLS = json.loads({json.dumps(json.dumps(calls, indent=1))})


def server():
    command = os.environ.get("MCP_REPLAY_COMMAND")
    if command:
        argv = split(command)  # Windows rules on Windows: backslashes stay
    else:
        notebook = os.environ.get("MCP_REPLAY_NOTEBOOK", NOTEBOOK)
        if not notebook:
            pytest.skip("no notebook recorded: set MCP_REPLAY_NOTEBOOK or MCP_REPLAY_COMMAND")
        argv = [sys.executable, "-m", "mcp_notebook", "serve", notebook, "--transport", "stdio"]
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))


async def replay(client, call):
    method, target, arguments = call["method"], call["target"], call["arguments"]
    if method == "tools/call":
        return await client.call_tool(target, arguments)
    if method == "resources/read":
        return await client.read_resource(target)
    if method == "skills/get":  # the SDK has no skills helper: a raw request, same session
        from mcp_types import Request
        from pydantic import TypeAdapter

        request = Request[dict, str](method=method, params={{"uri": target}})
        return await client.session.send_request(request, TypeAdapter(dict))
    return await client.get_prompt(target, arguments)


@pytest.mark.parametrize("call", CALLS, ids=[f"{{c['method']}}-{{c['target']}}" for c in CALLS])
def test_a_recorded_call_gives_the_same_result(call):
    async def run():
        async with Client(server(), mode="auto") as client:
            return await replay(client, call)

    assert_matches(call["expected"], dumped(asyncio.run(run()), call["expected"]))
'''


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` as one line of printable characters, for a comment of generated code:
    line breaks (also those only ``str.splitlines`` and IPython's line transforms see:
    ``\x0c``, ``\x1c``, U+2028...), controls and bidi marks escaped; at most ``limit``."""
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def dumped(result: Any, expected: dict[str, Any]) -> dict[str, Any]:
    """An SDK result model as wire JSON, limited to the keys ``expected`` has."""
    data: dict[str, Any] = (
        result  # a raw request's result (skills/get)
        if isinstance(result, dict)
        else result.model_dump(by_alias=True, exclude_none=True, mode="json")
    )
    return {key: data.get(key) for key in expected}


def assert_matches(expected: Any, actual: Any, where: str = "result") -> None:
    """Raise AssertionError naming the first place ``actual`` differs from ``expected``."""
    if isinstance(expected, dict) and expected.get("type") == "image":
        _image_matches(expected, actual, where)
    elif isinstance(expected, dict):
        if not isinstance(actual, dict):
            raise AssertionError(f"{where}: expected an object, got {actual!r}")
        keys = set(expected) - {"_meta"}
        if keys != set(actual) - {"_meta"}:
            raise AssertionError(f"{where}: keys {sorted(actual)} != {sorted(expected)}")
        for key in sorted(keys):
            assert_matches(expected[key], actual[key], f"{where}.{key}")
    elif isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            raise AssertionError(f"{where}: expected {len(expected)} items, got {actual!r}")
        for index, (one, other) in enumerate(zip(expected, actual, strict=True)):
            assert_matches(one, other, f"{where}[{index}]")
    elif isinstance(expected, str) and isinstance(actual, str) and expected != actual:
        one, other = _json(expected), _json(actual)
        if one is _NOT_JSON or other is _NOT_JSON:
            raise AssertionError(f"{where}: {actual!r} != {expected!r}")
        assert_matches(one, other, f"{where} (as JSON)")
    elif isinstance(expected, float) or isinstance(actual, float):
        if not (
            isinstance(actual, (int, float))
            and not isinstance(actual, bool)
            and math.isclose(expected, actual, rel_tol=FLOAT_TOLERANCE, abs_tol=1e-12)
        ):
            raise AssertionError(f"{where}: {actual!r} is not close to {expected!r}")
    elif expected != actual or type(expected) is not type(actual):
        raise AssertionError(f"{where}: {actual!r} != {expected!r}")


_NOT_JSON = object()


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


def _image_matches(expected: dict[str, Any], actual: Any, where: str) -> None:
    if not isinstance(actual, dict) or actual.get("type") != "image":
        raise AssertionError(f"{where}: expected an image, got {actual!r:.200}")
    if actual.get("mimeType") != expected.get("mimeType"):
        raise AssertionError(f"{where}: {actual.get('mimeType')} != {expected.get('mimeType')}")
    one = base64.b64decode(expected.get("data", ""))
    other = base64.b64decode(actual.get("data", ""))
    sizes = png_size(one), png_size(other)
    if sizes[0] is not None:
        if sizes[0] != sizes[1]:
            raise AssertionError(f"{where}: a {sizes[1]} image, expected {sizes[0]}")
    elif abs(len(other) - len(one)) > IMAGE_BYTES_TOLERANCE * max(len(one), 1):
        raise AssertionError(f"{where}: {len(other)} bytes of image, expected about {len(one)}")
