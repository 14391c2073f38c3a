"""The ``%mcp`` command line: its subcommands and their options, parsed by argparse that
reports bad input as a UsageError (and help as help), never exiting the kernel. The docs'
reference page is generated from :func:`magic_parser`."""

from __future__ import annotations

import argparse

from IPython.core.error import UsageError

from ..auth.config import add_flags as add_auth_flags
from ..clients import BRIDGE_DISPATCHER_HELP, CLIENTS, DISPATCHER_FLAG, DISPATCHER_HELP
from ..errors import McpNotebookError
from ..exposure import ALLOW_FLAG
from ..protocol.confirmation import POLICIES


class HelpShown(McpNotebookError):
    """``-h`` printed the help: the magic ends there, with nothing more to say."""


class MagicParser(argparse.ArgumentParser):
    """argparse that reports bad input as a UsageError instead of exiting the kernel."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"%mcp: {message}\n{self.format_usage()}")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if status or message:
            raise UsageError(message or self.format_usage())
        raise HelpShown  # argparse printed the help once, as help: not an error too


def magic_parser() -> MagicParser:
    parser = MagicParser(prog="%mcp", add_help=True)
    commands = parser.add_subparsers(dest="command", parser_class=MagicParser)
    start = commands.add_parser("start", help="serve over Streamable HTTP")
    start.add_argument("--host", default="127.0.0.1")
    start.add_argument("--port", type=int, default=None, help="0 picks a free port")
    start.add_argument("--name", default=None, help="server name shown to clients")
    auth = start.add_mutually_exclusive_group()
    auth.add_argument("--token", default=None, help="bearer token (default: random)")
    auth.add_argument("--no-auth", action="store_true", help="accept requests without a token")
    start.add_argument(
        ALLOW_FLAG,
        action="store_true",
        help="with --no-auth on a non-loopback --host: let every host that reaches it in",
    )
    start.add_argument(DISPATCHER_FLAG, action="store_true", help=DISPATCHER_HELP)
    add_auth_flags(start)  # OAuth: --auth-issuer URL ... (auth/config.py)
    commands.add_parser("stop", help="stop serving")
    commands.add_parser("status", help="show the server state")
    commands.add_parser("list", help="list registered tools, resources and prompts")
    config = commands.add_parser("config", help="print the configuration for an MCP client")
    config.add_argument("client", choices=CLIENTS)
    config.add_argument(DISPATCHER_FLAG, action="store_true", help=BRIDGE_DISPATCHER_HELP)
    monitor = commands.add_parser("monitor", help="show a live monitor of calls")
    monitor.add_argument("--history", type=int, default=None, help="calls kept (default 1000)")
    confirm = commands.add_parser(
        "confirm", help="which tools ask before they run: " + "|".join(POLICIES) + "|TOOL..."
    )
    confirm.add_argument("policy", nargs="*", help=f"{', '.join(POLICIES)}, or tool names")
    confirm.add_argument("--timeout", type=float, default=None, help="seconds (default 120)")
    debug = commands.add_parser("debug", help="post-mortem debugger on a failed call")
    debug.add_argument("call_id", type=int, help="the call's number (mcp.calls[i].id)")
    trace = commands.add_parser("trace", help="show raw JSON-RPC traffic in the monitors")
    trace.add_argument("state", choices=("on", "off"))
    history = commands.add_parser(
        "history", help="show or set the limits of the call history (mcp.calls)"
    )
    history.add_argument("--max-mb", type=float, default=None, help="MiB all calls hold")
    history.add_argument(
        "--call-kb", type=float, default=None, help="KiB kept of each argument/result/output"
    )
    history.add_argument("--max-calls", type=int, default=None, help="calls kept")
    history.add_argument("--clear", action="store_true", help="forget every call")
    tasks = commands.add_parser(
        "tasks", help="list the tasks clients poll, set when a call becomes one, cancel one"
    )
    tasks.add_argument(
        "--after",
        default=None,
        help="an optional-task call becomes a task once it ran this long (e.g. 2s, 500ms)",
    )
    tasks.add_argument("--cancel", default=None, metavar="TASK", help="a task's id or number")
    record = commands.add_parser("record", help="record calls, then save them as pytest tests")
    record.add_argument("action", choices=("start", "stop", "save"))
    record.add_argument("path", nargs="?", help="save: the pytest file to write")
    export = commands.add_parser("export", help="write the saved notebook as an MCP package")
    export.add_argument("directory", help="the package's folder")
    export.add_argument("--notebook", default=None, help="the notebook file (default: this one)")
    export.add_argument("--package", default=None, help="import name (default: NAME_mcp)")
    stop_at = commands.add_parser(
        "break", help="the tool's next call stops at its first line in the kernel's debugger"
    )
    stop_at.add_argument("tool", help="a tool's name, or * for whichever tool is called next")
    stop_at.add_argument(
        "--when", default=None, help="a Python expression over its arguments (quotes optional)"
    )
    unbreak = commands.add_parser("unbreak", help="drop %%mcp break on a tool (all: no TOOL)")
    unbreak.add_argument("tool", nargs="?", default=None)
    return parser
