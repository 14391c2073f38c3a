"""The ``mcp-notebook`` command: serve | bridge | list | config | export."""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import sys
from importlib import resources
from pathlib import Path

from ._version import __version__
from .auth.config import AuthConfigError, flag_values, from_settings
from .auth.config import add_flags as add_auth_flags
from .clients import BRIDGE_DISPATCHER_HELP, CLIENTS, DISPATCHER_FLAG, DISPATCHER_HELP
from .exposure import ALLOW_FLAG, UnsafeBind, check
from .protocol.unattended import HEADLESS, headless_banner

logger = logging.getLogger(__name__)


def _default_notebook() -> Path:
    """The quickstart notebook: the checkout's copy if here, else the one in the package."""
    local = Path("notebooks/quickstart.ipynb")
    if local.is_file():
        return local
    return Path(str(resources.files("mcp_notebook") / "_data" / "quickstart.ipynb"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-notebook", description="Serve a Jupyter notebook as an MCP server."
    )
    parser.add_argument("--version", action="version", version=__version__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run a notebook in a fresh kernel and serve it")
    serve.add_argument(
        "notebook",
        nargs="?",
        type=Path,
        help="the .ipynb, or a percent-format .py (`# %% cells`), to serve (default: the "
        "quickstart)",
    )
    serve.add_argument("--transport", choices=["http", "stdio"], default="http")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=None, help="default 8765, or any free port")
    serve.add_argument("--name", default=None, help="server name (default: the notebook's)")
    auth = serve.add_mutually_exclusive_group()
    auth.add_argument("--token", default=None, help="bearer token (default: random)")
    auth.add_argument("--no-auth", action="store_true", help="accept requests without a token")
    serve.add_argument(
        "--watch",
        action="store_true",
        help="when the notebook file changes, run its changed cells and those after them "
        "again in the same kernel (needs the watch extra)",
    )
    serve.add_argument(
        ALLOW_FLAG,
        action="store_true",
        help="with --no-auth on a non-loopback --host: let every host that reaches it in",
    )
    serve.add_argument(DISPATCHER_FLAG, action="store_true", help=DISPATCHER_HELP)
    serve.add_argument(
        "--confirm",
        choices=HEADLESS,
        default="deny",
        help="tools that ask first (confirm=True), with nobody at a notebook: deny them "
        "(default), elicit (the client asks its user; its own answer runs them), or allow",
    )
    serve.add_argument(
        "--debug-port",
        type=int,
        default=None,
        help="the kernel's debugger (Debug Adapter Protocol) on 127.0.0.1:PORT, for VS Code",
    )
    add_auth_flags(serve)  # OAuth 2.1 resource server: --auth-issuer URL ... (auth/config.py)

    bridge = commands.add_parser("bridge", help="MCP on stdio, relayed to a running notebook")
    bridge.add_argument("name", nargs="?", help="the server's name (default: the only one)")
    bridge.add_argument("--url", default=None, help="the notebook's endpoint, instead of a name")
    bridge.add_argument(
        "--token", default=None, help="bearer token (default: $MCP_NOTEBOOK_TOKEN or discovery)"
    )
    bridge.add_argument(DISPATCHER_FLAG, action="store_true", help=BRIDGE_DISPATCHER_HELP)

    commands.add_parser("list", help="list the notebook servers running on this machine")

    config = commands.add_parser("config", help="print the configuration for an MCP client")
    config.add_argument("client", choices=CLIENTS)
    config.add_argument("name", nargs="?", help="the server's name (default: the only one)")
    config.add_argument(DISPATCHER_FLAG, action="store_true", help=BRIDGE_DISPATCHER_HELP)
    export = commands.add_parser("export", help="write a notebook as a standalone MCP package")
    export.add_argument("notebook", type=Path, help="the .ipynb or percent-format .py")
    export.add_argument("-o", "--output", type=Path, required=True, help="the package's folder")
    export.add_argument("--package", default=None, help="import name (default: NAME_mcp)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if args.command in ("list", "config", "export"):
        _human_console()  # not for bridge or serve: their stdout may carry protocol bytes
    return {
        "serve": _serve,
        "bridge": _bridge,
        "list": _list,
        "config": _config,
        "export": _export,
    }[args.command](args)


def _human_console() -> None:
    """Print what the console cannot show as escapes rather than fail.

    Names, paths and notebooks may be non-ASCII; a Windows console in cp1252, or
    PYTHONIOENCODING=ascii, would raise UnicodeEncodeError from ``print``.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)  # None under pythonw
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def _shows(text: str) -> bool:
    """Whether standard output can show ``text`` as it is."""
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _serve(args: argparse.Namespace) -> int:
    from .headless import serve_http, serve_stdio
    from .notebookfile import UnreadableNotebook
    from .notebookstart import ServeOptions

    path = args.notebook or _default_notebook()
    if not path.is_file():
        print(f"mcp-notebook: no such notebook: {path}", file=sys.stderr)
        return 2
    oauth = flag_values(args)
    try:
        from_settings(oauth)  # bad values fail here, before a kernel starts
    except AuthConfigError as exc:
        print(f"mcp-notebook serve: {exc}", file=sys.stderr)
        return 2
    if oauth and (args.transport != "http" or args.token or args.no_auth):
        print(
            "mcp-notebook serve: --auth-* is for --transport http, instead of --token/--no-auth",
            file=sys.stderr,
        )
        return 2
    if args.transport == "http":  # stdio serves on a private loopback port of its own
        try:
            check(args.host, not args.no_auth or bool(oauth), args.allow_remote_no_auth)
        except UnsafeBind as exc:
            print(f"mcp-notebook serve: {exc}", file=sys.stderr)
            return 2
    options = ServeOptions(
        host=args.host,
        port=args.port,
        token=args.token,
        auth=not args.no_auth,
        name=args.name,
        allow_remote_no_auth=args.allow_remote_no_auth,
        watch=args.watch,
        dispatcher=args.dispatcher,
        debug_port=args.debug_port,
        confirm=args.confirm,
        oauth=oauth or None,
    )
    print(headless_banner(args.confirm), file=sys.stderr)
    on_ready = None
    if args.watch:
        try:
            import watchfiles  # noqa: F401 - here, to say so before the kernel starts
        except ImportError:
            print(
                'mcp-notebook serve --watch needs watchfiles: pip install "mcp-notebook[watch]"',
                file=sys.stderr,
            )
            return 2
        from .watching import watch

        on_ready = watch
    serve = serve_stdio if args.transport == "stdio" else serve_http
    try:
        return serve(path, options, on_ready)
    except UnreadableNotebook as exc:
        print(f"mcp-notebook serve: {exc}", file=sys.stderr)
        return 2


def _export(args: argparse.Namespace) -> int:
    from .export.package import ExportFailed, export_notebook
    from .notebookfile import UnreadableNotebook

    if not args.notebook.is_file():
        print(f"mcp-notebook: no such notebook: {args.notebook}", file=sys.stderr)
        return 2
    try:
        result = export_notebook(args.notebook, args.output, package=args.package)
    except (ExportFailed, UnreadableNotebook, ValueError) as exc:
        print(f"mcp-notebook export: {exc}", file=sys.stderr)
        return 1
    print(result.summary())
    return 0


def _bridge(args: argparse.Namespace) -> int:
    from . import stopping
    from .bridge import Bridge, Target, protocol_stdout

    output = protocol_stdout()
    token = args.token or os.environ.get("MCP_NOTEBOOK_TOKEN") or None
    bridge = Bridge(
        Target(name=args.name, url=args.url, token=token), output, dispatcher=args.dispatcher
    )
    # An MCP client closes stdin, then sends SIGTERM (the Python SDK after 2 s) while the
    # bridge may still wait for replies in flight: stop waiting, but end the session.
    stopper = stopping.install(bridge.close, repeat_ends=True)
    try:
        try:
            bridge.relay_stdin(sys.stdin.buffer)
            stopper.ignore_further()  # closing anyway: a SIGTERM now must not cut it short
        finally:
            bridge.close()
    except KeyboardInterrupt:
        logger.info("stopped on request; the session with the notebook is ended")
    return 0


def _list(args: argparse.Namespace) -> int:
    from . import discovery

    problem = discovery.refusal()
    if problem:
        print(f"mcp-notebook: {problem}", file=sys.stderr)
        return 1
    records = discovery.running()
    if not records:
        print(f"No notebook servers are running (looked in {discovery.folder()}).")
        return 0
    for record in records:
        started = datetime.datetime.fromtimestamp(record.started).strftime("%Y-%m-%d %H:%M:%S")
        notebook = record.notebook or "-"
        print(f"{record.name}\t{record.url}\tpid {record.pid}\t{started}\t{notebook}")
    return 0


def _config(args: argparse.Namespace) -> int:
    from . import discovery
    from .clients import snippet

    try:
        record = discovery.find(args.name)
        name, url, token = record.name, record.url, record.token
    except discovery.NotFound as exc:
        if args.name is None:
            print(f"mcp-notebook: {exc}", file=sys.stderr)
            return 1
        name, url, token = args.name, None, None  # the bridge finds it once it runs
    found = snippet(args.client, name, url, token, dispatcher=args.dispatcher)
    print(found.where, file=sys.stderr)
    print(found.text)
    if not _shows(found.text):
        print(
            "(This console cannot show some characters of it: they are printed as escapes. "
            "Run again with PYTHONIOENCODING=utf-8 to copy it as it is.)",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
