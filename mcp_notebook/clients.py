"""Configuration snippets for MCP clients, ready to paste."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode")


@dataclass(frozen=True)
class Snippet:
    where: str  # what to do with it, for a person
    text: str  # exactly what to paste: JSON, or shell commands


def bridge_command(name: str) -> list[str]:
    """This Python, by absolute path, running the stdio bridge to the server ``name``."""
    return [sys.executable, "-m", "mcp_notebook", "bridge", name]


def stdio_command(name: str) -> str:
    """The ``claude mcp add`` line that reaches the notebook through the stdio bridge.

    It holds no secret: the bridge reads the token from the discovery file.
    """
    return f"claude mcp add --transport stdio {shlex.quote(name)} -- " + shlex.join(
        bridge_command(name)
    )


def http_command(name: str, url: str, token: str | None) -> str:
    """The ``claude mcp add`` line that reaches the notebook over HTTP."""
    header = f" --header {shlex.quote(f'Authorization: Bearer {token}')}" if token else ""
    return f"claude mcp add --transport http {shlex.quote(name)} {url}{header}"


def snippet(client: str, name: str, url: str | None = None, token: str | None = None) -> Snippet:
    command, *args = bridge_command(name)
    stdio = {"command": command, "args": args}
    if client == "claude-desktop":
        return Snippet(
            "Merge into claude_desktop_config.json (Settings > Developer > Edit Config):",
            json.dumps({"mcpServers": {name: stdio}}, indent=2),
        )
    if client == "cursor":
        return Snippet(
            "Merge into ~/.cursor/mcp.json (or .cursor/mcp.json in a project):",
            json.dumps({"mcpServers": {name: stdio}}, indent=2),
        )
    if client == "vscode":
        return Snippet(
            "Merge into .vscode/mcp.json:",
            json.dumps({"servers": {name: {"type": "stdio", **stdio}}}, indent=2),
        )
    if client == "claude-code":
        lines = [stdio_command(name)]
        where = "Run in a shell (stdio through the bridge, which follows kernel restarts)"
        if url:
            lines.append(http_command(name, url, token))
            where += "; or the second line, straight to the notebook over HTTP"
        return Snippet(where + ":", "\n".join(lines))
    raise ValueError(f"unknown client {client!r}: choose one of {', '.join(CLIENTS)}")
