"""What an exported notebook's package runs on: the ``mcp`` object and its servers, no kernel.

Imports no IPython, ipykernel or ipywidgets (an import-linter contract says so): the
exported code registers with the same API as in the notebook (``@mcp.tool``,
``mcp.resource``, ``mcp.prompt``, ``@mcp.resource_template``), the same ``Server`` core
serves it, and tools run on worker threads (so a slow tool does not stop the server
answering), or on the serving loop with ``inline=True``.

- ``python -m PACKAGE`` -> :func:`main`: stdio (default) or ``--transport http`` (the ASGI
  app below served by uvicorn, export/http.py: no tornado);
- ``PACKAGE.asgi:app`` -> :func:`asgi_app`: the ASGI app for uvicorn and the like, set up
  from ``MCP_NOTEBOOK_*`` environment variables.

Part of the runtime distribution (runtime_modules.py): imports nothing of the kernel,
the notebook UI, the bridge or tornado; the ``mcp`` object is :class:`~mcp_notebook.base.BaseMCP`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import exposure
from .._version import __version__
from ..auth.config import AuthConfig, AuthConfigError
from ..auth.config import from_env as auth_from_env
from ..base import BaseMCP
from ..protocol import CallRecord, InlineExecutor, Server
from ..protocol.confirmation import Confirmer
from ..protocol.executor import Executor, ExecutorBase, settle
from ..protocol.telemetry import apply as apply_tracing
from ..protocol.unattended import HEADLESS, headless_banner
from ..registry import pictures
from ..registry.content import CONVERTERS
from ..transports.security import new_token
from . import skill_folders

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


def exported_app(name: str, namespace: dict[str, Any]) -> BaseMCP:
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
    app = BaseMCP(name)
    app.namespace = namespace
    # The notebook's markdown cells, written beside the code (package.py) when a cell
    # makes a skill: mcp.skill(from_cells=...) reads them as it would the notebook.
    module_file = namespace.get("__file__")
    cells = Path(module_file).with_name("notebook.ipynb") if module_file else None
    if cells is not None and cells.is_file():
        app.notebook_path = str(cells)
    if module_file:  # and mcp.skill(path=...) reads the package's copies of its folders
        app.skill_folder_copies = skill_folders.copies(Path(module_file).parent)
    return app


def server_of(app: BaseMCP, *, inline: bool = False) -> Server:
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
    apply_tracing(app.tracing_settings, server)
    return server


def asgi_app(
    app: BaseMCP, *, inline: bool | None = None, environ: Mapping[str, str] | None = None
) -> McpAsgiApp:
    """The ASGI app serving ``app``: ``$MCP_NOTEBOOK_TOKEN`` is the bearer token (a random
    one, logged, if unset; ``MCP_NOTEBOOK_NO_AUTH=1`` for none), ``$MCP_NOTEBOOK_HOST`` the
    address it is reached at (default 127.0.0.1: other Host headers are refused),
    ``$MCP_NOTEBOOK_ALLOWED_HOSTS`` / ``_ORIGINS`` comma-separated lists to let in,
    ``$MCP_NOTEBOOK_CONFIRM`` what a confirm=True tool does (deny, elicit or allow)."""
    env = os.environ if environ is None else environ
    confirm_from(app, env.get(CONFIRM_ENV))
    if inline is None:
        inline = env.get(INLINE_ENV, "") in ("1", "true", "yes")
    host = env.get(HOST_ENV, "127.0.0.1")
    oauth = auth_from_env(env)  # MCP_AUTH_*: the issuer's tokens instead of the static one
    auth = oauth is None and env.get(NO_AUTH_ENV, "") not in ("1", "true", "yes")
    remote = env.get(ALLOW_REMOTE_NO_AUTH_ENV, "") in ("1", "true", "yes")
    exposure.check(host, auth or oauth is not None, remote)
    token = _token(auth, env.get(TOKEN_ENV))
    return _asgi(server_of(app, inline=inline), host, token, env, oauth)


def _token(auth: bool, given: str | None) -> str | None:
    """The bearer token: ``given``, else a random one, logged; None without ``auth``."""
    if not auth:
        return None
    if given:
        return given
    token = new_token()
    logger.warning("no %s set: clients must send 'Bearer %s'", TOKEN_ENV, token)
    return token


def _asgi(
    server: Server,
    host: str,
    token: str | None,
    env: Mapping[str, str],
    oauth: AuthConfig | None = None,
) -> McpAsgiApp:
    from ..transports.asgi import McpAsgiApp

    return McpAsgiApp(
        server,
        token=token,
        host=host,
        allowed_hosts=_listed(env.get(ALLOWED_HOSTS_ENV)),
        allowed_origins=_listed(env.get(ALLOWED_ORIGINS_ENV)),
        auth=oauth,
    )


def _listed(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def confirm_from(app: BaseMCP, value: str | None) -> None:
    """Set what ``app``'s confirm=True tools do (deny when unset), and say it on stderr."""
    app.confirm_headless = value or "deny"  # ValueError for a word it does not know
    logger.warning("%s", headless_banner(app.confirm_headless))


def main(app: BaseMCP, argv: list[str] | None = None) -> int:
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
    server = server_of(app, inline=args.inline)
    if args.transport == "stdio":
        from ..stdoutclaim import protocol_stdout
        from .stdio import serve_stdio

        # A tool's print, native code's or a child process's writes (on Windows: to the
        # standard output handle) go to stderr; the protocol has stdout to itself.
        output = protocol_stdout()
        asyncio.run(_logging_to(app, server, serve_stdio(server, stdout=output)))
        return 0
    return _serve_http(app, server, args)


async def _logging_to(app: BaseMCP, server: Server, serving: Any) -> None:
    """Await ``serving`` while ``mcp.log`` reaches ``server``'s clients."""
    undo = _log_on(app, server, asyncio.get_running_loop())
    try:
        await serving
    finally:
        undo()


def _log_on(app: BaseMCP, server: Server, loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
    def send(level: str, data: Any, name: str | None) -> None:
        if not loop.is_closed():
            loop.call_soon_threadsafe(server.log, level, data, name)

    return app.add_log_target(send)


def _serve_http(app: BaseMCP, server: Server, args: argparse.Namespace) -> int:
    from . import http

    try:
        http.require()
    except http.MissingServer as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        oauth = auth_from_env(os.environ)
    except AuthConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    auth = oauth is None and not args.no_auth
    exposure.check(args.host, auth or oauth is not None, args.allow_remote_no_auth)
    token = _token(auth, args.token or os.environ.get(TOKEN_ENV))
    sockets = http.bind(args.host, args.port)
    url = http.url_of(args.host, sockets)
    if oauth is not None:  # its audience: this URL, unless MCP_AUTH_AUDIENCE names one
        oauth = oauth.for_endpoint(url)
        print(f"OAuth: access tokens of {oauth.issuer} for {oauth.resource}", file=sys.stderr)
    asgi = _asgi(server, args.host, token, os.environ, oauth)
    print(f"serving {app.name} at {url}", file=sys.stderr)
    if token:
        print(f"token: {token}", file=sys.stderr)
    sys.stderr.flush()
    http.serve(asgi, sockets, on_loop=partial(_serving, app, server, url), verbose=args.verbose)
    print(f"stopped serving {app.name}", file=sys.stderr)
    return 0


def _serving(
    app: BaseMCP, server: Server, url: str, loop: asyncio.AbstractEventLoop
) -> Callable[[], None]:
    """On the serving loop, its stop handlers installed: only now is ``app`` running (a
    Ctrl+Break or Ctrl-C from here on stops it cleanly)."""
    undo_logging = _log_on(app, server, loop)
    app._serving_url = url

    def undo() -> None:
        app._serving_url = None
        undo_logging()

    return undo
