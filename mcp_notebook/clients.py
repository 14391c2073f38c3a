"""Configuration snippets for MCP clients, ready to paste.

What differs between Windows, macOS and Linux is decided here, at call time: where each
client keeps its configuration, which Python runs the bridge, how a command line is quoted.
Each snippet carries :func:`discovery.environment`: clients start the bridge with a small
environment of their own, without the variables that moved the kernel's runtime folder.
"""

from __future__ import annotations

import json
import ntpath
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from . import discovery

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode", "gemini-cli", "codex")
# The dispatcher (protocol/dispatcher_tools.py): two stable tools that list and call the
# notebook's current tools, for clients that ignore list_changed.
DISPATCHER_FLAG = "--dispatcher"
DISPATCHER_HELP = "offer every client two stable tools that list and call the current tools"
BRIDGE_DISPATCHER_HELP = (
    "the bridge asks for two stable tools that list and call the notebook's current tools "
    "(for clients that ignore list_changed)"
)

# The file each client reads its MCP servers from, by sys.platform ("" for Linux and others).
CONFIG_FILES = {
    "claude-desktop": {
        "win32": r"%APPDATA%\Claude\claude_desktop_config.json",
        "darwin": "~/Library/Application Support/Claude/claude_desktop_config.json",
        "": "~/.config/Claude/claude_desktop_config.json",
    },
    "cursor": {"win32": r"%USERPROFILE%\.cursor\mcp.json", "": "~/.cursor/mcp.json"},
    "vscode": {
        "win32": r"%APPDATA%\Code\User\mcp.json",
        "darwin": "~/Library/Application Support/Code/User/mcp.json",
        "": "~/.config/Code/User/mcp.json",
    },
}


@dataclass(frozen=True)
class Snippet:
    where: str  # what to do with it, for a person
    text: str  # exactly what to paste: JSON, or shell commands


def config_file(client: str) -> str:
    """Where ``client`` keeps its MCP servers on this platform, as its documentation says."""
    per_platform = CONFIG_FILES[client]
    return per_platform.get(sys.platform, per_platform[""])


def python_executable() -> str:
    """This Python by absolute path; on Windows the console ``python.exe``.

    A kernel may run under ``pythonw.exe``, which has no standard streams of its own: the
    stdio bridge needs the console interpreter of the same installation, next to it.
    """
    if sys.platform == "win32":
        folder, program = ntpath.split(sys.executable)
        if program.lower() == "pythonw.exe":
            return ntpath.join(folder, "python.exe")
    return sys.executable


def command_line(words: list[str]) -> str:
    """``words`` as one command line to paste: Windows quoting on Windows, POSIX sh elsewhere."""
    if sys.platform == "win32":
        return subprocess.list2cmdline(words)
    return shlex.join(words)


def bridge_command(name: str, dispatcher: bool = False) -> list[str]:
    """This Python, by absolute path, running the stdio bridge to the server ``name``;
    with ``dispatcher``, the bridge asks the notebook for the dispatcher's tools."""
    command = [python_executable(), "-m", "mcp_notebook", "bridge", name]
    return [*command, DISPATCHER_FLAG] if dispatcher else command


def stdio_command(name: str, dispatcher: bool = False) -> str:
    """The ``claude mcp add`` line that reaches the notebook through the stdio bridge.

    It holds no secret: the bridge reads the token from the discovery file. The name comes
    before ``--env``, whose values are variadic (they would swallow a name after them).
    """
    add = ["claude", "mcp", "add", "--transport", "stdio", name, *_env_options("--env")]
    return command_line([*add, "--", *bridge_command(name, dispatcher)])


def _env_options(flag: str) -> list[str]:
    """``flag KEY=VALUE`` for each variable the bridge needs (discovery.environment)."""
    settings = [f"{key}={value}" for key, value in discovery.environment().items()]
    return [word for setting in settings for word in (flag, setting)]


def gemini_stdio_command(name: str, dispatcher: bool = False) -> str:
    """The ``gemini mcp add`` line for the stdio bridge, in the order Gemini CLI takes.

    Its ``--env`` takes every word after it up to the next option (it would swallow the
    name), it has no ``--transport stdio NAME ... --`` form, and words such as ``-m``
    after the command would be its own options: name and command first, then ``--env``,
    then ``--`` and the command's arguments. User scope: in every folder the user trusts.
    """
    command, *args = bridge_command(name, dispatcher)
    add = ["gemini", "mcp", "add", "--scope", "user", name, command, *_env_options("--env")]
    return command_line([*add, "--", *args])


def gemini_http_command(name: str, url: str, authorization: str | None) -> str:
    """The ``gemini mcp add`` line for ``url``; ``--header`` last (it takes what follows)."""
    add = ["gemini", "mcp", "add", "--scope", "user", "--transport", "http", name, url]
    header = ["--header", f"Authorization: {authorization}"] if authorization else []
    return command_line([*add, *header])


def codex_name(name: str) -> str:
    """``name`` as Codex takes a server's name: ASCII letters, digits and ``-_:@/.`` (it
    refuses a space); the bridge's own argument keeps the notebook's name."""
    return re.sub(r"[^A-Za-z0-9_:@/.-]", "-", name) or "notebook"


def codex_command(name: str, command: list[str], env: dict[str, str]) -> str:
    """The ``codex mcp add`` line that starts ``command``: Codex takes no ``--transport``;
    a stdio server is ``NAME [--env KEY=VALUE]... -- COMMAND...``."""
    options = [word for key, value in env.items() for word in ("--env", f"{key}={value}")]
    return command_line(["codex", "mcp", "add", codex_name(name), *options, "--", *command])


def http_command(name: str, url: str, token: str | None) -> str:
    """The ``claude mcp add`` line that reaches the notebook over HTTP."""
    header = ["--header", f"Authorization: Bearer {token}"] if token else []
    return command_line(["claude", "mcp", "add", "--transport", "http", name, url, *header])


def _stdio_entry(name: str, dispatcher: bool) -> dict[str, Any]:
    command, *args = bridge_command(name, dispatcher)
    return {"command": command, "args": args, "env": discovery.environment()}


def snippet(
    client: str,
    name: str,
    url: str | None = None,
    token: str | None = None,
    *,
    dispatcher: bool = False,
) -> Snippet:
    """What to paste into ``client``. ``dispatcher``: the bridge asks the notebook for the
    dispatcher's tools (only a bridge can ask: claude-code's HTTP line is left out)."""
    if client == "claude-desktop":
        return Snippet(
            f"Merge into {config_file(client)} (Settings > Developer > Edit Config), "
            "then restart Claude Desktop:",
            json.dumps({"mcpServers": {name: _stdio_entry(name, dispatcher)}}, indent=2),
        )
    if client == "cursor":
        return Snippet(
            f"Merge into {config_file(client)} (or .cursor/mcp.json in a project):",
            json.dumps({"mcpServers": {name: _stdio_entry(name, dispatcher)}}, indent=2),
        )
    if client == "vscode":
        return Snippet(
            f"Merge into .vscode/mcp.json in a workspace, or into {config_file(client)} "
            "(MCP: Open User Configuration):",
            json.dumps(
                {"servers": {name: {"type": "stdio", **_stdio_entry(name, dispatcher)}}}, indent=2
            ),
        )
    if client == "claude-code":
        lines = [stdio_command(name, dispatcher)]
        where = "Run in a shell (stdio through the bridge, which follows kernel restarts)"
        if url and not dispatcher:
            lines.append(http_command(name, url, token))
            where += "; or the second line, straight to the notebook over HTTP"
        return Snippet(where + ":", "\n".join(lines))
    if client == "gemini-cli":
        lines = [gemini_stdio_command(name, dispatcher)]
        where = "Run in a shell (stdio through the bridge, which follows kernel restarts)"
        if url and not dispatcher:
            lines.append(gemini_http_command(name, url, f"Bearer {token}" if token else None))
            where += "; or the second line, straight to the notebook over HTTP"
        return Snippet(where + f". {GEMINI_TRUST}:", "\n".join(lines))
    if client == "codex":
        line = codex_command(name, bridge_command(name, dispatcher), discovery.environment())
        return Snippet(
            "Run in a shell (stdio through the bridge, which follows kernel restarts; Codex "
            "reads the server from ~/.codex/config.toml when it starts):",
            line,
        )
    raise ValueError(f"unknown client {client!r}: choose one of {', '.join(CLIENTS)}")


# Gemini CLI starts MCP servers only in folders the user trusts (it asks in a new folder).
GEMINI_TRUST = (
    "Gemini CLI connects to it in folders you trust (it asks when it starts in a new one; "
    "/permissions changes it)"
)


def through_jupyter_snippet(client: str, name: str, url: str, authorization: str) -> Snippet:
    """What to paste into ``client`` on another machine, to reach the notebook through
    Jupyter Server at ``url`` with the Jupyter credential ``authorization`` (the value of
    the Authorization header, e.g. ``token abc``)."""
    headers = {"Authorization": authorization}
    if client == "claude-code":
        add = ["claude", "mcp", "add", "--transport", "http", name, url]
        line = command_line([*add, "--header", f"Authorization: {authorization}"])
        return Snippet("Run in a shell, on the machine of the agent:", line)
    if client == "vscode":
        entry = {"type": "http", "url": url, "headers": headers}
        return Snippet(
            "Merge into .vscode/mcp.json, or the user's mcp.json (MCP: Open User Configuration):",
            json.dumps({"servers": {name: entry}}, indent=2),
        )
    if client == "cursor":
        entry = {"url": url, "headers": headers}
        return Snippet(
            "Merge into ~/.cursor/mcp.json (or .cursor/mcp.json in a project):",
            json.dumps({"mcpServers": {name: entry}}, indent=2),
        )
    if client == "gemini-cli":
        line = gemini_http_command(name, url, authorization)
        return Snippet(f"Run in a shell, on the machine of the agent. {GEMINI_TRUST}:", line)
    # Claude Desktop speaks stdio, and Codex takes a token for HTTP only from a variable of
    # its own environment: the bridge of an mcp-notebook installed over there.
    token = authorization.split(None, 1)[1] if " " in authorization else authorization
    if client == "codex":
        bridge = ["mcp-notebook", "bridge", "--url", url]
        return Snippet(
            "Run in a shell, on the machine of the agent, with `pip install mcp-notebook`:",
            codex_command(name, bridge, {"MCP_NOTEBOOK_TOKEN": token}),
        )
    if client == "claude-desktop":
        entry = {
            "command": "mcp-notebook",
            "args": ["bridge", "--url", url],
            "env": {"MCP_NOTEBOOK_TOKEN": token},
        }
        return Snippet(
            "Merge into Claude Desktop's claude_desktop_config.json (Settings > Developer > "
            "Edit Config) on a machine with `pip install mcp-notebook`, then restart it:",
            json.dumps({"mcpServers": {name: entry}}, indent=2),
        )
    raise ValueError(f"unknown client {client!r}: choose one of {', '.join(CLIENTS)}")
