"""What an exported notebook's package runs on: the ``mcp`` object and its servers, no kernel.

Imports no IPython, ipykernel or ipywidgets (an import-linter contract says so): the
exported code registers with the same API as in the notebook (``@mcp.tool``,
``mcp.resource``, ``mcp.prompt``, ``@mcp.resource_template``), the same ``Server`` core
serves it, and tools run on worker threads (so a slow tool does not stop the server
answering), or on the serving loop with ``inline=True``.

- ``python -m PACKAGE`` -> :func:`main`: stdio (default) or ``--transport http`` (the same
  tornado server as ``mcp-notebook serve``, with its token and Host/Origin checks);
- ``PACKAGE.asgi:app`` -> :func:`asgi_app`: the ASGI app for uvicorn and the like, set up
  from ``MCP_NOTEBOOK_*`` environment variables.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import secrets
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any

from .. import exposure, stopping
from .._version import __version__
from ..app import NotebookMCP
from ..protocol import CallRecord, InlineExecutor, Server
from ..protocol.confirmation import Confirmer
from ..protocol.executor import Executor, ExecutorBase, settle
from ..protocol.unattended import HEADLESS, headless_banner
from ..registry import pictures
from ..registry.content import CONVERTERS

if TYPE_CHECKING:  # imported by asgi_app: python -m PACKAGE needs no ASGI app
    from ..transports.asgi import McpAsgiApp

logger = logging.getLogger(__name__)

TOKEN_ENV = "MCP_NOTEBOOK_TOKEN"
NO_AUTH_ENV = "MCP_NOTEBOOK_NO_AUTH"
HOST_ENV = "MCP_NOTEBOOK_HOST"
ALLOWED_HOSTS_ENV = "MCP_NOTEBOOK_ALLOWED_HOSTS"
ALLOWED_ORIGINS_ENV = "MCP_NOTEBOOK_ALLOWED_ORIGINS"
ALLOW_REMOTE_NO_AUTH_ENV = "MCP_NOTEBOOK_ALLOW_REMOTE_NO_AUTH"
# deny (the default), elicit or allow: what a confirm=True tool does (protocol/unattended.py).
CONFIRM_ENV = "MCP_NOTEBOOK_CONFIRM"
INLINE_ENV = "MCP_NOTEBOOK_INLINE"  # 1: tools on the serving loop (faster; a slow one stalls it)
DEFAULT_WORKERS = 8


class WorkerExecutor(ExecutorBase):
    """Runs user code on a pool of threads; an ``async def`` tool runs on the serving loop."""

    def __init__(self, workers: int = DEFAULT_WORKERS) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="mcp-tool")

    async def run(self, work: Callable[[], Any], record: CallRecord | None = None) -> Any:
        started = work if record is None else partial(_start, work, record)
        value = await asyncio.get_running_loop().run_in_executor(self._pool, started)
        return await settle(value)  # a coroutine made on the thread is awaited here


def _start(work: Callable[[], Any], record: CallRecord) -> Any:
    """On a worker: the call runs now, unless it was dropped while it waited for one
    (its client hung up; the server's side was cancelled and awaits nothing)."""
    if not record.set_status("running"):
        return None
    return work()


def exported_app(name: str, namespace: dict[str, Any]) -> NotebookMCP:
    """The ``mcp`` of an exported notebook; ``namespace`` is its module's globals, which
    ``mcp.resource(var=...)`` reads as a notebook's variables."""
    if pictures.convert not in CONVERTERS:  # figures and PIL images, as in a kernel
        CONVERTERS.append(pictures.convert)
    # A server opens no windows. Left to choose, matplotlib takes the desktop's backend
    # (macosx on macOS, TkAgg on Windows), and a figure that a tool draws with pyplot on a
    # worker thread then crashes the process (macOS) or fails (Tk): draw off-screen, as a
    # kernel's inline backend does. Set before the notebook's code imports matplotlib; a
    # backend the user chose (MPLBACKEND, matplotlib.use) still wins.
    os.environ.setdefault("MPLBACKEND", "Agg")
    app = NotebookMCP(name)
    app.namespace = namespace
    return app


def server_of(app: NotebookMCP, *, inline: bool = False) -> Server:
    """A Server for ``app``'s registry; confirmations as ``app.confirm_headless`` says."""
    executor: Executor = InlineExecutor() if inline else WorkerExecutor()
    server = Server(
        app.registry,
        name=app.name,
        version=__version__,
        instructions=app.instructions,
        executor=executor,
        calls=app.calls,
    )
    server.confirm = Confirmer(app).confirm  # app.ui is None: nobody at a notebook
    return server


def asgi_app(
    app: NotebookMCP, *, inline: bool | None = None, environ: Mapping[str, str] | None = None
) -> McpAsgiApp:
    """The ASGI app serving ``app``: ``$MCP_NOTEBOOK_TOKEN`` is the bearer token (a random
    one, logged, if unset; ``MCP_NOTEBOOK_NO_AUTH=1`` for none), ``$MCP_NOTEBOOK_HOST`` the
    address it is reached at (default 127.0.0.1: other Host headers are refused),
    ``$MCP_NOTEBOOK_ALLOWED_HOSTS`` / ``_ORIGINS`` comma-separated lists to let in,
    ``$MCP_NOTEBOOK_CONFIRM`` what a confirm=True tool does (deny, elicit or allow)."""
    from ..transports.asgi import McpAsgiApp

    env = os.environ if environ is None else environ
    confirm_from(app, env.get(CONFIRM_ENV))
    if inline is None:
        inline = env.get(INLINE_ENV, "") in ("1", "true", "yes")
    host = env.get(HOST_ENV, "127.0.0.1")
    auth = env.get(NO_AUTH_ENV, "") not in ("1", "true", "yes")
    exposure.check(host, auth, env.get(ALLOW_REMOTE_NO_AUTH_ENV, "") in ("1", "true", "yes"))
    token = env.get(TOKEN_ENV) or None
    if auth and token is None:
        token = secrets.token_urlsafe(24)
        logger.warning("no %s set: clients must send 'Bearer %s'", TOKEN_ENV, token)
    return McpAsgiApp(
        server_of(app, inline=inline),
        token=token if auth else None,
        host=host,
        allowed_hosts=_listed(env.get(ALLOWED_HOSTS_ENV)),
        allowed_origins=_listed(env.get(ALLOWED_ORIGINS_ENV)),
    )


def _listed(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def confirm_from(app: NotebookMCP, value: str | None) -> None:
    """Set what ``app``'s confirm=True tools do (deny when unset), and say it on stderr."""
    app.confirm_headless = value or "deny"  # ValueError for a word it does not know
    logger.warning("%s", headless_banner(app.confirm_headless))


def main(app: NotebookMCP, argv: list[str] | None = None) -> int:
    """``python -m PACKAGE [--transport stdio|http] ...``."""
    parser = argparse.ArgumentParser(prog=app.name, description=f"Serve {app.name} over MCP.")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=None, help="default 8765, or any free port")
    auth = parser.add_mutually_exclusive_group()
    auth.add_argument("--token", default=None, help=f"bearer token (default: ${TOKEN_ENV})")
    auth.add_argument("--no-auth", action="store_true", help="accept requests without a token")
    parser.add_argument("--allow-remote-no-auth", action="store_true")
    parser.add_argument(
        "--inline",
        action="store_true",
        help="run tools on the serving loop, not on worker threads: faster, but a slow "
        "synchronous tool holds every other request up",
    )
    parser.add_argument(
        "--confirm",
        choices=HEADLESS,
        default=os.environ.get(CONFIRM_ENV) or "deny",
        help="tools that ask first (confirm=True): deny them (default), elicit (the client "
        f"asks its user; its own answer runs them), or allow (default: ${CONFIRM_ENV})",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        app.confirm_headless = args.confirm
    except ValueError as exc:  # from $MCP_NOTEBOOK_CONFIRM: argparse checks only the option
        parser.error(f"{CONFIRM_ENV}: {exc}")
    print(headless_banner(args.confirm), file=sys.stderr, flush=True)
    if args.transport == "stdio":
        from ..bridge import protocol_stdout
        from .stdio import serve_stdio

        # A tool's print, native code's or a child process's writes (on Windows: to the
        # standard output handle) go to stderr; the protocol has stdout to itself.
        output = protocol_stdout()
        asyncio.run(serve_stdio(server_of(app, inline=args.inline), stdout=output))
        return 0
    info = app.start(
        args.host,
        args.port,
        token=args.token or os.environ.get(TOKEN_ENV) or None,
        auth=not args.no_auth,
        executor=InlineExecutor() if args.inline else WorkerExecutor(),
        allow_remote_no_auth=args.allow_remote_no_auth,
    )
    print(f"serving {info.name} at {info.url}", file=sys.stderr)
    if info.token:
        print(f"token: {info.token}", file=sys.stderr)
    sys.stderr.flush()
    # serve's stop path: SIGINT/SIGTERM, and on Windows Ctrl+Break and a closed console
    # (whose handler must have stopped the server before it returns).
    stopped = threading.Event()

    def cleanup() -> None:  # from a console handler: done before it returns
        stopped.set()
        app.stop()

    stopper = stopping.install(cleanup)
    try:
        while not stopped.wait(0.5):  # timed: Windows runs a signal handler only between
            pass  # waits (an untimed Event.wait there never returns to Python for Ctrl-C)
    except KeyboardInterrupt:
        pass
    finally:
        stopper.ignore_further()  # a second Ctrl-C must not cut the stop short
        app.stop()
    print(f"stopped serving {info.name}", file=sys.stderr)
    return 0
