"""The pytest file `%mcp record save` writes quotes what clients sent: it must stay data.

A client chooses a resource URI; a template's level-1 value may hold a line break, and a
call that failed is listed in the file's "Not replayed" comment with its URI. Unescaped,
the line break ended the comment and the rest of the URI became code that ran on the
notebook owner's machine the next time they ran pytest.
"""

from __future__ import annotations

import ast
import asyncio

import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server, Session

PAYLOADS = [
    'notes://x\nimport os; os.system("touch PWNED")',
    'notes://x\rimport os; os.system("touch PWNED")',  # a lone CR ends a line for Python
    "notes://x\u2028\x0c\x1by",  # other separators, an escape code
]


async def _recorded(uris: list[str]) -> NotebookMCP:
    app = NotebookMCP()

    @app.resource_template("notes://{day}", name="notes")
    def notes(day: str) -> str:
        raise RuntimeError("no notes that day")

    @app.tool
    def add(a: int) -> int:
        return a

    server = Server(app.registry, name="t", version="1", calls=app.calls)
    session = server.open_session(Session())
    session.outbound = lambda message, related: True
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x"}}
    await server.handle(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, session
    )
    call = {"name": "add", "arguments": {"a": 1}}
    await server.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}, session
    )
    for number, uri in enumerate(uris, 2):
        message = {
            "jsonrpc": "2.0",
            "id": number,
            "method": "resources/read",
            "params": {"uri": uri},
        }
        reply = await server.handle(message, session)
        assert reply is not None and "error" in reply  # it ran, failed, and was recorded
    return app


@pytest.mark.parametrize("uri", PAYLOADS)
def test_a_client_s_uri_cannot_write_code_into_the_replay_file(tmp_path, uri):
    app = asyncio.run(_recorded([uri]))
    path = tmp_path / "test_replay.py"
    skipped = app.calls.to_pytest(path)
    assert len(skipped) == 1 and "resources/read" in skipped[0]
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)  # still a valid file
    notes = source[source.index("# Not replayed:") : source.index("CALLS = ")]
    assert all(line.startswith("#") for line in notes.splitlines())
    # Nothing ran at import but what the generator wrote: no statement calls os.system.
    assert "os.system" not in {
        ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)
    }
    assert ascii(uri[len("notes://x") :])[1:-1] in notes  # still readable, escaped


async def _hostile_calls() -> NotebookMCP:
    app = NotebookMCP()

    @app.tool
    def options(**given) -> dict:
        """Any keys: the client names them."""
        return given

    def fails(text: str) -> str:
        raise RuntimeError("always")

    from mcp_notebook.registry import Tool

    hostile_name = 'fails\nimport os; os.system("touch PWNED")\u2028#'
    app.registry.add_tool(Tool(fails, hostile_name))  # a name @mcp.tool would refuse
    server = Server(app.registry, name="t", version="1", calls=app.calls)
    session = server.open_session(Session())
    session.outbound = lambda message, related: True
    client = {"name": 'x\nimport os; os.system("touch PWNED")', "version": "1"}
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    await server.handle(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, session
    )
    keys = {
        '"""\nimport os; os.system("touch PWNED")\n"""': 1,
        "x')\nimport os; os.system('touch PWNED')#": "\u2028\\'\"",
    }
    for number, (name, arguments) in enumerate(
        [("options", keys), (hostile_name, {"text": '"""; os.system("touch PWNED")'})], 1
    ):
        message = {"jsonrpc": "2.0", "id": number, "method": "tools/call"}
        message["params"] = {"name": name, "arguments": arguments}
        await server.handle(message, session)
    return app


def test_names_keys_and_values_a_client_chose_stay_data_in_the_replay_file(tmp_path):
    app = asyncio.run(_hostile_calls())
    path = tmp_path / "test_replay.py"
    skipped = app.calls.to_pytest(path)
    assert len(skipped) == 1  # the failed call, listed in a comment
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    assert "os.system" not in {
        ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)
    }
    notes = source[source.index("# Not replayed:") : source.index("CALLS = ")]
    assert all(line.startswith("#") for line in notes.splitlines())
    # What the file replays is exactly what the client sent: data, read back from JSON.
    calls = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "CALLS"
    )
    replayed = eval(compile(ast.Expression(calls), "CALLS", "eval"), {"json": __import__("json")})
    (call,) = replayed
    assert call["target"] == "options" and set(call["arguments"]) == {
        '"""\nimport os; os.system("touch PWNED")\n"""',
        "x')\nimport os; os.system('touch PWNED')#",
    }
