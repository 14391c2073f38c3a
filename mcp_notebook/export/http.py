"""``python -m PACKAGE --transport http``: the export's ASGI app, served by uvicorn.

The same app as ``uvicorn PACKAGE.asgi:app`` (its token and Host/Origin checks), on
sockets bound here (transports/binding.py: the default port unless taken, ``localhost``
on both loopbacks), so the URL printed is the one that listens. No tornado: uvicorn is
the export's ``asgi`` extra, and without it this says how to install it.

Stopping: Ctrl-C, SIGTERM (and Ctrl+Break on Windows) end uvicorn gracefully; uvicorn then
raises the signal again, which :mod:`~mcp_notebook.stopping`'s handler turns into the
``KeyboardInterrupt`` caught here, so the process exits 0 after saying so.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

from .. import stopping
from .._version import __version__
from ..errors import McpNotebookError
from ..transports.binding import listen
from .wheel import wheel_name

DEFAULT_PORT = 8765
CONSOLE_GRACE = 4.0  # seconds a closed console's handler waits for the stop (Windows: 5)
NO_UVICORN = (
    "--transport http needs uvicorn, the package's asgi extra: in the exported package's "
    f'folder, pip install wheels/{wheel_name(__version__)} ".[asgi]"'
)


class MissingServer(McpNotebookError, RuntimeError):
    """uvicorn is not installed."""


def require() -> None:
    """Raises :class:`MissingServer` (how to install it) when uvicorn is not installed."""
    try:
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise MissingServer(NO_UVICORN) from exc


def bind(host: str, port: int | None) -> list[socket.socket]:
    """Listening sockets: ``port``, or the default port if free, else any free one."""
    if port is not None:
        return listen(host, port)
    try:
        return listen(host, DEFAULT_PORT, exclusive=True)  # other apps may use it too
    except OSError:
        return listen(host, 0)


def url_of(host: str, sockets: list[socket.socket], path: str = "/mcp") -> str:
    port = sockets[0].getsockname()[1]
    if host in ("0.0.0.0", "::"):
        host = socket.gethostname()
    elif host == "localhost" and len(sockets) == 1:
        host = sockets[0].getsockname()[0]  # no IPv6 here: name the address that listens
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


def serve(
    app: Any,
    sockets: list[socket.socket],
    *,
    on_loop: Callable[[asyncio.AbstractEventLoop], Callable[[], None]] | None = None,
    verbose: bool = False,
) -> None:
    """Serve the ASGI ``app`` on ``sockets`` until asked to stop; ``on_loop(loop)`` runs on
    the serving loop first and returns what to undo at the end."""
    require()
    import uvicorn

    config = uvicorn.Config(
        app, lifespan="off", log_level="info" if verbose else "warning", access_log=verbose
    )
    server = uvicorn.Server(config)
    stopped = threading.Event()

    async def run() -> None:
        undo = on_loop(asyncio.get_running_loop()) if on_loop else None
        try:
            await server.serve(sockets=sockets)
        finally:
            if undo is not None:
                undo()
            stopped.set()

    def cleanup() -> None:  # a closed console on Windows: the process ends once this returns
        server.should_exit = True
        stopped.wait(CONSOLE_GRACE)

    stopper = stopping.install(cleanup)
    try:
        asyncio.run(run())
    except KeyboardInterrupt:  # uvicorn's stop signal, raised again after its shutdown
        pass
    finally:
        stopper.ignore_further()  # a second Ctrl-C must not cut the stop short
        for sock in sockets:
            sock.close()
    sys.stderr.flush()
