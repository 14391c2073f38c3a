"""``%mcp start|stop|status|list|config|monitor|confirm|debug|trace|history|tasks|record|
export|break|unbreak``."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.display import display

from ..app import NotebookMCP
from ..auth.config import AuthConfigError, flag_values
from ..clients import (
    CLIENTS,
    snippet,
    stdio_command,
    through_jupyter_snippet,
)
from ..exposure import UnsafeBind, who_can_reach
from ..protocol.calls import mib
from ..protocol.confirmation import describe
from ..protocol.dispatcher_tools import CALL_TOOL, LIST_TOOL
from ..reach import TOKEN_PLACEHOLDER, loopback_note, through_jupyter
from . import breaks, capture
from .magicparser import HelpShown, magic_parser
from .magicwords import count as _count
from .magicwords import duration as _duration
from .magicwords import summary as _summary
from .magicwords import words as _words


@magics_class
class McpMagics(Magics):
    def __init__(self, shell: Any, app: NotebookMCP) -> None:
        super().__init__(shell)
        self.app = app
        self.parser = magic_parser()
        # %mcp record: calls with ids after the first, up to the second (None: still on).
        self._recorded: tuple[int, int | None] | None = None

    @line_magic
    def mcp(self, line: str) -> None:
        """Control the notebook's MCP server (see %mcp -h).

        start|stop|status|list|config CLIENT serve; monitor shows calls live; confirm sets
        which tools ask first; debug CALL_ID opens a failed call in the debugger; trace on|off
        shows raw JSON-RPC in the monitors.
        """
        if line.split(maxsplit=1)[:1] == ["break"] and " --when " in f"{line} ":
            # The expression as typed: splitting would take the quotes out of its strings.
            head, _, when = line.partition("--when")
            words, expression = _words(head), when.strip()
            if not expression:
                raise UsageError("%mcp break: --when needs an expression")
            args = self._parse([*words, "--when", expression])
            if args is not None:
                self._break(args)
            return
        args = self._parse(_words(line))
        if args is None:
            return
        if args.command is None:  # bare %mcp: what it can do, as help
            self.parser.print_help()
            return
        getattr(self, "_" + args.command)(args)

    def _parse(self, words: list[str]) -> argparse.Namespace | None:
        """The parsed line, or None when it asked for help (argparse printed it)."""
        try:
            return self.parser.parse_args(words)
        except HelpShown:
            return None

    def _record(self, args: argparse.Namespace) -> None:
        """start / stop marking the calls to keep; save PATH writes them as a pytest file."""
        last = max((record.id for record in self.app.calls), default=0)
        if args.action == "start":
            self._recorded = (last, None)
            print("recording calls: %mcp record stop, then %mcp record save PATH")
            return
        if self._recorded is None:
            raise UsageError("%mcp record: nothing recorded yet: %mcp record start first")
        first, end = self._recorded
        if args.action == "stop":
            self._recorded = (first, end if end is not None else last)
            print(f"recorded {sum(first < r.id <= last for r in self.app.calls)} calls")
            return
        if not args.path:
            raise UsageError("%mcp record save PATH: where to write the pytest file")
        stop = end if end is not None else last
        chosen = [record for record in self.app.calls if first < record.id <= stop]
        try:
            skipped = self.app.calls.to_pytest(args.path, chosen, notebook=self.app.notebook_path)
        except (ValueError, OSError) as exc:
            raise UsageError(f"%mcp record save: {exc}") from None
        print(f"wrote {args.path}: {len(chosen) - len(skipped)} calls replayed")
        for reason in skipped:
            print(f"  not replayed: {reason}")

    def _export(self, args: argparse.Namespace) -> None:
        """Export the notebook as saved on disk, pinned to this kernel's packages."""
        from ..export.package import ExportFailed, export_notebook

        notebook = args.notebook or self.app.notebook_path
        if not notebook:
            raise UsageError("%mcp export: this kernel does not know its notebook: --notebook PATH")
        try:
            result = export_notebook(Path(notebook), Path(args.directory), package=args.package)
        except (ExportFailed, ValueError, OSError) as exc:
            raise UsageError(f"%mcp export: {exc}") from None
        print(result.summary())

    def _start(self, args: argparse.Namespace) -> None:
        if args.port is not None and not 0 <= args.port <= 65535:
            raise UsageError(f"%mcp start: --port must be 0-65535, not {args.port}")
        for option, value in (("--token", args.token), ("--name", args.name)):
            if value is not None and not value.strip():  # else a default would be taken unasked
                raise UsageError(f"%mcp start: {option} must not be empty")
        serving = self.app.url
        oauth = flag_values(args)
        if oauth and (args.token or args.no_auth):
            raise UsageError("%mcp start: --auth-* replaces the token: drop --token/--no-auth")
        try:
            info = self.app.start(
                args.host,
                args.port,
                token=args.token,
                auth=not args.no_auth,
                name=args.name,
                allow_remote_no_auth=args.allow_remote_no_auth,
                dispatcher=args.dispatcher,
                oauth=oauth or None,
            )
        except (UnsafeBind, AuthConfigError) as exc:
            raise UsageError(f"%mcp start: {exc}") from None
        except OSError as exc:
            where = args.host if args.port is None else f"{args.host}:{args.port}"
            still = f" The server at {self.app.url} keeps serving." if self.app.url else ""
            raise UsageError(f"%mcp start: cannot listen on {where}: {exc}.{still}") from None
        if self.app.headless:
            return  # `mcp-notebook serve` says where it serves, once, in its own words
        if serving and serving != info.url:
            print(f"(Stopped serving at {serving}.)")
        print(f"MCP server {info.name!r} serving at {info.url}")
        if self.app.status()["dispatcher"]:
            print(f"Dispatcher on: every client also gets {LIST_TOOL} and {CALL_TOOL}.")
        oauth_issuer = self.app.status()["oauth"]
        reach = who_can_reach(info.host, info.port, info.token, bool(oauth_issuer))
        if oauth_issuer:
            print(f"OAuth: access tokens of {oauth_issuer} for this resource are required.")
            print(f"Clients connect to {info.url} with one (the stdio bridge has none).")
            if reach:
                print(reach)
            return
        # Cell outputs are saved in the .ipynb, and notebooks get shared: never the token.
        if info.token:
            print("A bearer token is required; it is not shown here, to keep it out of the")
            print("saved notebook: mcp.token, or %mcp config claude-code, shows it.")
        if reach:
            print(reach)
        print(f"Claude Code: {stdio_command(info.name)}")
        print(f"Other clients: %mcp config {'|'.join(CLIENTS)}")
        through = through_jupyter(info.name)
        if through is not None:
            where = through.url if through.absolute else f"{through.url} on your JupyterHub"
            print(f"From other machines, through Jupyter Server: {where}")
            print("(with a Jupyter token, not the kernel's; %mcp config CLIENT shows how)")
            note = loopback_note(through.url)
            if note:
                print(f"({note})")

    def _stop(self, args: argparse.Namespace) -> None:
        was_running = self.app.running
        self.app.stop()
        print("MCP server stopped." if was_running else "MCP server was not running.")

    def _status(self, args: argparse.Namespace) -> None:
        status = self.app.status()
        if not status["running"]:
            print("The MCP server is not running (%mcp start starts it).")
        else:
            auth = "a bearer token" if status["auth"] else "no authentication"
            if status["oauth"]:
                auth = f"OAuth access tokens of {status['oauth']}"
            print(
                f"MCP server {self.app.name!r} is serving at {status['url']} with {auth}; "
                f"{_count(status['sessions'], 'session')} open."
            )
            if status["dispatcher"]:
                print(f"Every client also gets the dispatcher tools {LIST_TOOL} and {CALL_TOOL}.")
            through = through_jupyter(self.app.name)
            if through is not None:
                print(f"Through Jupyter Server: {through.url}")
        registered = [
            _count(len(status["tools"]), "tool"),
            _count(len(status["resources"]), "resource"),
            _count(len(status["resource_templates"]), "resource template"),
            _count(len(status["prompts"]), "prompt"),
        ]
        print(f"Registered: {', '.join(registered[:-1])} and {registered[-1]}.")
        print(
            f"Confirmation: {describe(self.app.confirm_policy)}; a question not answered in "
            f"{self.app.confirm_timeout:g} s is declined. "
            f"{_count(len(self.app.calls), 'call')} in mcp.calls."
        )

    def _config(self, args: argparse.Namespace) -> None:
        if not self.app.running:
            print("(The server is not running: %mcp start, then the client can connect.)")
        if self.app.oauth_issuer:
            print(
                f"(This server takes OAuth access tokens of {self.app.oauth_issuer}: the client "
                f"connects to {self.app.url} with one; the stdio bridge below has none.)"
            )
        found = snippet(
            args.client, self.app.name, self.app.url, self.app.token, dispatcher=args.dispatcher
        )
        print(found.where)
        print(found.text)
        through = through_jupyter(self.app.name)
        if through is not None:
            url = through.url if through.absolute else "https://YOUR-HUB" + through.url
            print(f"\nFrom another machine, through Jupyter Server ({through.token_hint}):")
            note = loopback_note(url)
            if note:
                print(f"({note})")
            other = through_jupyter_snippet(
                args.client, self.app.name, url, through.header().split(": ", 1)[1]
            )
            print(other.where)
            print(other.text)
            if TOKEN_PLACEHOLDER in other.text:
                print(f"(Put {through.token_hint} in place of {TOKEN_PLACEHOLDER}.)")
            elif through.token:
                print("(This output holds the Jupyter token: clear it before you share it.)")
        if self.app.token and self.app.token in found.text:
            # Asked for on purpose, but cell outputs are saved with the notebook.
            print("(This output holds the bearer token: clear it before you share the notebook.)")

    def _monitor(self, args: argparse.Namespace) -> None:
        if args.history is not None:
            if args.history < 1:
                raise UsageError(f"%mcp monitor: --history must be at least 1, not {args.history}")
            self.app.calls.maxlen = args.history
        ui = self._ui("monitor")
        # The front end that ran the cell shows its MCP panel, if it has the extension.
        kernel = getattr(self.shell, "kernel", None)
        ui.open_panel(kernel.get_parent("shell") if kernel is not None else None)
        display(ui.monitor())  # type: ignore[no-untyped-call]  # IPython's, unannotated

    def _confirm(self, args: argparse.Namespace) -> None:
        if args.timeout is not None:
            if not 0 < args.timeout < math.inf:
                raise UsageError(
                    f"%mcp confirm: --timeout must be a positive number of seconds, not "
                    f"{args.timeout}"
                )
            self.app.confirm_timeout = args.timeout
        if args.policy:
            try:
                self.app.confirm_policy = args.policy
            except ValueError as exc:
                raise UsageError(f"%mcp confirm: {exc}") from None
        policy, tools = self.app.confirm_policy, self.app.registry.tools
        asking = [name for name in tools if self.app.needs_confirmation(name)]
        print(
            f"Confirmation policy: {describe(policy)} (timeout {self.app.confirm_timeout:g} s). "
            f"Tools that ask first: {', '.join(asking) or 'none'}"
        )
        unknown = (
            [name for name in policy if name not in tools] if isinstance(policy, tuple) else []
        )
        if unknown:
            print(f"(Not registered yet: {', '.join(unknown)}; they will ask once they are.)")

    def _debug(self, args: argparse.Namespace) -> None:
        record = self.app.calls.find(args.call_id)
        if record is None:
            raise UsageError(f"%mcp debug: no call #{args.call_id} in the history (mcp.calls)")
        try:
            capture.debug(record)
        except LookupError as exc:
            raise UsageError(f"%mcp debug: {exc}") from None

    def _break(self, args: argparse.Namespace) -> None:
        if args.tool != breaks.ANY and args.tool not in self.app.registry.tools:
            raise UsageError(f"%mcp break: no tool {args.tool!r} is registered")
        try:
            when = breaks.BREAKS.add(args.tool, args.when)
        except SyntaxError as exc:
            message = f"%mcp break: --when {args.when!r} is not an expression: {exc.msg}"
            raise UsageError(message) from None
        which = f" where {when}" if when else ""
        tool = "any tool" if args.tool == breaks.ANY else args.tool
        if breaks.debugger_listening():
            print(f"The next call of {tool}{which} stops at its first line in the debugger.")
            return
        print(
            "No debugger is listening to this kernel: open JupyterLab's Debugger panel (or "
            f"attach VS Code), and the next call of {tool}{which} stops at its first line; "
            "until then, calls run on and the break stays."
        )

    def _unbreak(self, args: argparse.Namespace) -> None:
        dropped = breaks.BREAKS.remove(args.tool)
        if args.tool is not None and not dropped:
            raise UsageError(f"%mcp unbreak: no break on {args.tool!r}")
        print(f"No break on {', '.join(dropped)} now." if dropped else "No breaks were set.")

    def _trace(self, args: argparse.Namespace) -> None:
        self._ui("trace").set_trace(args.state == "on")
        print(f"JSON-RPC trace {args.state} (shown in the monitors).")

    def _ui(self, command: str) -> Any:
        if self.app.ui is None:
            raise UsageError(f"%mcp {command} needs a Jupyter kernel (widgets)")
        return self.app.ui

    def _list(self, args: argparse.Namespace) -> None:
        registry = self.app.registry
        sections = [
            ("tool", [(t.name, t.description) for t in registry.tools.values()]),
            ("resource", [(r.uri, r.description) for r in registry.resources.values()]),
            (
                "resource template",
                [(t.uri_template, t.description) for t in registry.templates.values()],
            ),
            ("prompt", [(p.name, p.description) for p in registry.prompts.values()]),
        ]
        for noun, items in sections:
            print(f"{_count(len(items), noun).capitalize()}{':' if items else '.'}")
            for key, description in items:
                summary = _summary(description)
                print(f"  {key}" + (f" - {summary}" if summary else ""))

    def _tasks(self, args: argparse.Namespace) -> None:
        store = self.app.tasks
        if args.after is not None:
            store.after = _duration(args.after)
        if args.cancel is not None:
            task = next((t for t in store.list() if args.cancel in (t.id, str(t.number))), None)
            if task is None:
                raise UsageError(f"%mcp tasks: no task {args.cancel!r} (see %mcp tasks)")
            store.cancel(task, "cancelled from the notebook")
        tasks = store.list()
        print(
            f"Tasks (mcp.tasks): {len(tasks)} kept; an optional-task call becomes a task "
            f"after {store.after:g}s (or at once when it must wait)."
        )
        for task in tasks:
            progress = f", progress {task.progress[0]:g}" if task.progress else ""
            print(
                f"  #{task.number} {task.status:<14} {task.target} from {task.client or '?'}, "
                f"{task.age():.0f}s old{progress}  id {task.id}"
            )

    def _history(self, args: argparse.Namespace) -> None:
        calls = self.app.calls
        limits = (
            ("--max-mb", args.max_mb, 1024 * 1024),
            ("--call-kb", args.call_kb, 1024),
            ("--max-calls", args.max_calls, 1),
        )
        for option, value, unit in limits:
            # "not 1 <= ...": NaN fails too; a limit is at least one byte (or call).
            if value is not None and not 1 <= value * unit <= 2**62:
                what = "calls" if unit == 1 else "bytes"
                raise UsageError(
                    f"%mcp history: {option} must be a positive number (at most 2**62 "
                    f"{what}), not {value}"
                )
        if args.max_mb is not None:
            calls.max_bytes = int(args.max_mb * 1024 * 1024)
        if args.call_kb is not None:
            calls.max_call_bytes = int(args.call_kb * 1024)
        if args.max_calls is not None:
            calls.maxlen = args.max_calls
        if args.clear:
            calls.clear()
        print(
            f"Call history (mcp.calls): {len(calls)} of at most {calls.maxlen} calls, "
            f"{mib(calls.bytes)} of at most {mib(calls.max_bytes)}; "
            f"each call keeps {calls.max_call_bytes / 1024:g} KiB of its arguments, result "
            "and output, and an abbreviated copy beyond that "
            f"({sum(1 for c in calls if c.abbreviated)} abbreviated now)."
        )
