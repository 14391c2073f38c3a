"""``mcp-notebook serve``: run a notebook in a fresh kernel and keep its server up.

The notebook runs in a real ipykernel started by jupyter_client, exactly as in Jupyter;
the server lives inside that kernel. This process only drives it and relays what the
cells print to stderr (stdout stays free for protocols).
"""

from __future__ import annotations

import logging
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jupyter_client.manager import KernelManager

from . import stopping
from .errors import McpNotebookError
from .exposure import who_can_reach
from .notebookfile import CodeCell, code_cells
from .openfiles import raise_open_file_limit

logger = logging.getLogger(__name__)

# Windows ends the process about 5 s after a closed console's handler is called: the
# kernel must be gone by then, busy or not.
HURRIED_SHUTDOWN = 2.0
SETTLE_TIMEOUT = 10.0  # seconds for requests in flight to be answered when the kernel dies

# Run first in the fresh kernel: pin serve's options (they win over the notebook's own
# `%mcp start` arguments). The extension, whenever it loads, sees the kernel is headless.
_SETUP = """\
__import__("mcp_notebook").mcp.serve_headless(**{options!r})
"""
# Run last: load the extension if the notebook did not (IPython would say "already
# loaded" otherwise), and serve if the notebook did not start the server itself.
_START = """\
if "mcp_notebook" not in get_ipython().extension_manager.loaded:
    get_ipython().run_line_magic("load_ext", "mcp_notebook")
if not __import__("mcp_notebook").mcp.running:
    __import__("mcp_notebook").mcp.start()
"""
# With --watch, before each code cell: remember what was registered (kernel/reloading.py).
_MARK = '__import__("mcp_notebook.kernel.reloading").kernel.reloading.reloads.mark({index})'
_ADDRESS = {
    "url": '__import__("mcp_notebook").mcp.url',
    "token": '__import__("mcp_notebook").mcp.token',
}


class NotebookError(McpNotebookError, RuntimeError):
    """A cell failed while the notebook was starting."""


@dataclass
class ServeOptions:
    host: str = "127.0.0.1"
    port: int | None = None
    token: str | None = None
    auth: bool = True
    name: str | None = None
    startup_timeout: float = 600.0
    allow_remote_no_auth: bool = False  # --no-auth on a non-loopback host, on purpose
    watch: bool = False  # re-run what changes on disk (watching.py)
    dispatcher: bool = False  # every client gets the dispatcher's tools


class NotebookKernel:
    """A kernel that has executed a notebook's code cells and serves its registry."""

    def __init__(self, path: Path, options: ServeOptions) -> None:
        self.path = path.resolve()
        self.options = options
        self.name = options.name or self.path.stem
        self.url: str | None = None
        self.token: str | None = None
        self.manager: KernelManager | None = None
        self.client: Any = None
        self.cells: list[CodeCell] = []  # the code cells as they last ran to the end
        # Shutdown may come from a console handler's thread while the main thread polls.
        self._lock = threading.Lock()

    def start(self) -> None:
        # Held throughout: a console handler's shutdown (another thread) waits for start
        # to finish or be interrupted, instead of closing the client under its feet.
        with self._lock:
            self._start()

    def _start(self) -> None:
        cells = code_cells(self.path)
        env = {**os.environ, "JPY_SESSION_NAME": str(self.path)}
        raise_open_file_limit()  # before the launch: the kernel (and its server) inherits it
        self.manager = KernelManager(kernel_name="python3")
        # The kernel's own stdout goes to our stderr: stdout may be a protocol stream.
        self.manager.start_kernel(
            env=env,
            cwd=str(self.path.parent),
            stdout=sys.stderr.fileno(),
            **kernel_popen_options(),
        )
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        # Not in the kernel's history: the code names the token.
        self._execute(_SETUP.format(options=self.pinned()), "setup", store_history=False)
        for index, cell in enumerate(cells):
            self.run_cell(index, cell)
        self.cells = cells
        reply = self._execute(_START, "start", _ADDRESS, store_history=False)
        values = reply["content"]["user_expressions"]
        self.url = _literal(values["url"])
        self.token = _literal(values["token"])

    def pinned(self) -> dict[str, Any]:
        """serve's options, for ``mcp.serve_headless``: they win over the notebook's."""
        options: dict[str, Any] = {
            "host": self.options.host,
            "auth": self.options.auth,
            "name": self.name,
            "allow_remote_no_auth": self.options.allow_remote_no_auth,
            "dispatcher": self.options.dispatcher,
        }
        if self.options.port is not None:
            options["port"] = self.options.port
        if self.options.token:
            options["token"] = self.options.token
        return options

    def run_cell(self, index: int, cell: CodeCell, *, stop_on_error: bool = True) -> None:
        """Execute code cell ``index`` of the notebook (``NotebookError`` if it fails)."""
        if self.options.watch:
            self.run_own(_MARK.format(index=index))
        self._execute(cell.source, f"cell {cell.number}", stop_on_error=stop_on_error)

    def run_own(self, code: str, expressions: dict[str, str] | None = None) -> dict[str, Any]:
        """Run code of ours, not the notebook's: kept out of the kernel's history."""
        return self._execute(code, "mcp-notebook", expressions, store_history=False)

    def _execute(
        self,
        code: str,
        where: str,
        expressions: dict[str, str] | None = None,
        *,
        store_history: bool = True,
        stop_on_error: bool = True,
    ) -> dict[str, Any]:
        reply = self.client.execute_interactive(
            code,
            store_history=store_history,
            user_expressions=expressions or {},
            output_hook=_relay_output,
            timeout=self.options.startup_timeout,
            stop_on_error=stop_on_error,
        )
        content = reply["content"]
        if content["status"] != "ok":
            trace = "\n".join(content.get("traceback") or [f"{content.get('ename')}"])
            raise NotebookError(f"{self.path.name}: {where} failed:\n{trace}")
        return reply

    def alive(self) -> bool:
        with self._lock:
            return self.manager is not None and self.manager.is_alive()

    def shutdown(self, hurry: bool = False) -> None:
        """Shut the kernel down (it removes its discovery file); a second call waits for
        the first and does nothing. ``hurry``: kill it if it has not exited after
        HURRIED_SHUTDOWN seconds (jupyter_client waits 5 s for a busy kernel)."""
        with self._lock:
            if self.client is not None:
                self.client.stop_channels()
            if self.manager is not None and self.manager.has_kernel:
                if hurry:
                    self.manager.shutdown_wait_time = HURRIED_SHUTDOWN
                self.manager.shutdown_kernel(now=False)
            self.manager = self.client = None


def kernel_popen_options() -> dict[str, Any]:
    """Extra ``Popen`` arguments for the kernel (jupyter_client passes them through).

    On Windows the kernel gets no console: a ``serve`` started by a GUI client has none to
    share, and Windows would open a window for it; in a terminal, Ctrl-C and a closed
    window then reach only ``serve``, which shuts the kernel down (as on POSIX, where
    jupyter_client starts the kernel in a session of its own).
    """
    if sys.platform == "win32":
        return {"creationflags": getattr(subprocess, "CREATE_NO_WINDOW", 0x08000000)}
    return {}


def _literal(value: dict[str, Any]) -> Any:
    import ast

    if value.get("status") != "ok":
        raise NotebookError(f"could not read the server address: {value.get('evalue')}")
    return ast.literal_eval(value["data"]["text/plain"])


def _relay_output(message: dict[str, Any]) -> None:
    content = message["content"]
    kind = message["msg_type"]
    if kind == "stream":
        sys.stderr.write(content["text"])
    elif kind in ("execute_result", "display_data"):
        text = content.get("data", {}).get("text/plain")
        if text:
            sys.stderr.write(text + "\n")


# Called once the notebook has run; returns what stops it (watching.watch for --watch).
OnReady = Callable[["NotebookKernel"], Callable[[], None]]


def serve_stdio(path: Path, options: ServeOptions, on_ready: OnReady | None = None) -> int:
    """Serve MCP on this process's stdin/stdout: the notebook's kernel behind the bridge."""
    from .bridge import Bridge, Target, protocol_stdout

    output = protocol_stdout()
    # The kernel's endpoint is private to this process: loopback, any port, its own token.
    private = ServeOptions(
        host="127.0.0.1",
        port=0,
        token=secrets.token_urlsafe(24),
        name=options.name,
        startup_timeout=options.startup_timeout,
        watch=options.watch,
        dispatcher=options.dispatcher,
    )
    kernel = NotebookKernel(path, private)
    stopped = threading.Event()
    stopper = _stop_on_request(kernel, stopped)
    stop_ready = None
    try:
        kernel.start()
        stop_ready = on_ready(kernel) if on_ready else None
        print(f"Serving {path} over MCP stdio", file=sys.stderr, flush=True)
        bridge = Bridge(Target(name=kernel.name, url=kernel.url, token=kernel.token), output)
        threading.Thread(
            target=_exit_with_kernel, args=(kernel, stopped, bridge), daemon=True
        ).start()
        bridge.run(sys.stdin.buffer)
        return 0
    except NotebookError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        if stop_ready is not None:
            stop_ready()
        _shut_down(kernel, stopped, stopper)


def _exit_with_kernel(kernel: NotebookKernel, stopped: threading.Event, bridge: Any) -> None:
    while kernel.alive() and not stopped.is_set():
        time.sleep(0.5)
    if stopped.is_set():
        return
    print("The kernel died; stopping.", file=sys.stderr, flush=True)
    # Requests in flight fail as their connections break: let them be answered first.
    bridge.settle(SETTLE_TIMEOUT)
    os._exit(1)


def serve_http(path: Path, options: ServeOptions, on_ready: OnReady | None = None) -> int:
    kernel = NotebookKernel(path, options)
    stopped = threading.Event()
    stopper = _stop_on_request(kernel, stopped)
    stop_ready = None
    try:
        kernel.start()
        stop_ready = on_ready(kernel) if on_ready else None
        print(f"Serving {path} over MCP Streamable HTTP at {kernel.url}", file=sys.stderr)
        if kernel.token:
            print(f"Token: {kernel.token}", file=sys.stderr)
        reach = who_can_reach(options.host, _port(kernel.url), kernel.token)
        if reach:
            print(reach, file=sys.stderr)
        print("Press Ctrl-C to stop.", file=sys.stderr, flush=True)
        while kernel.alive() and not stopped.is_set():
            time.sleep(0.5)
        if stopped.is_set():  # by a console handler, on its own thread
            print("Shutting down the kernel.", file=sys.stderr)
            return 0
        print("The kernel died; stopping.", file=sys.stderr)
        return 1
    except NotebookError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("Shutting down the kernel.", file=sys.stderr)
        return 0
    finally:
        if stop_ready is not None:
            stop_ready()
        _shut_down(kernel, stopped, stopper)


def _port(url: str | None) -> int | None:
    return urlsplit(url).port if url else None


def _stop_on_request(kernel: NotebookKernel, stopped: threading.Event) -> stopping.Stopper:
    """Ctrl-C, SIGTERM, and on Windows Ctrl+Break or a closed console, stop serving once."""

    def cleanup() -> None:  # from a console handler, which must not return before it is done
        stopped.set()  # on purpose: not a death
        kernel.shutdown(hurry=True)

    return stopping.install(cleanup)


def _shut_down(kernel: NotebookKernel, stopped: threading.Event, stopper: stopping.Stopper) -> None:
    stopper.ignore_further()  # a Ctrl-C now would cut the kernel's shutdown short
    stopped.set()  # the kernel is about to go on purpose: not a death
    kernel.shutdown()
