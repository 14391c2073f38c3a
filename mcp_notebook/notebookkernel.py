"""The kernel ``mcp-notebook serve`` runs a notebook in: a real ipykernel started by
jupyter_client, exactly as in Jupyter, with the server inside it. This process only drives
it: starts it, runs the code cells (showing which runs and what they print on stderr),
starts the server, interrupts and shuts it down.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager
from jupyter_core.utils import ensure_event_loop

from .notebookfile import CodeCell
from .notebookstart import NotebookError, ServeOptions, Stopped, View, read_code_cells
from .openfiles import raise_open_file_limit
from .startview import StartView, first_line

# Windows ends the process about 5 s after a closed console's handler is called: the
# kernel must be gone by then, busy or not.
HURRIED_SHUTDOWN = 2.0
READY_TIMEOUT = 60.0  # seconds for a fresh kernel to answer
POLL = 0.1  # seconds between looks at a stop request and the kernel's life while waiting
INTERRUPT_GRACE = 1.0  # seconds for an interrupted cell to end before the kernel shuts down
# A Unix socket's path has room for about 104 bytes (macOS); the kernel's take a suffix.
MAX_SOCKET_PREFIX = 90

# Run first in the fresh kernel: pin serve's options (they win over the notebook's own
# `%mcp start` arguments). The extension, whenever it loads, sees the kernel is headless.
_SETUP = """\
__import__("mcp_notebook").mcp.serve_headless(**{options!r})
"""
# Run last: load the extension if the notebook did not (IPython would say "already
# loaded" otherwise), and serve if the notebook did not start the server itself.
# --debug-port: debugpy in the kernel, on loopback only, for VS Code to attach to.
_DEBUGGER = "_mcp_address = __import__('debugpy').listen(('127.0.0.1', {port}))\ndel _mcp_address"
_START = """\
if "mcp_notebook" not in get_ipython().extension_manager.loaded:
    get_ipython().run_line_magic("load_ext", "mcp_notebook")
if not __import__("mcp_notebook").mcp.running:
    __import__("mcp_notebook").mcp.start()
"""
# With --watch, before each code cell: remember what was registered (kernel/reloading.py).
_MARK = '__import__("mcp_notebook.kernel.reloading").kernel.reloading.reloads.mark({args})'
# In the kernel's private folder: the reload run serve --watch interrupts (runinterrupts.py).
_INTERRUPT_REQUEST = "interrupt-request"
_ADDRESS = {
    "url": '__import__("mcp_notebook").mcp.url',
    "token": '__import__("mcp_notebook").mcp.token',
}


class NotebookKernel:
    """A kernel that has executed a notebook's code cells and serves its registry.

    :meth:`start` is :meth:`launch` (the kernel process starts; returns at once) then
    :meth:`run` (waits for it, runs the cells, starts the server: ``url`` and ``token``).
    :meth:`shutdown` may come from any thread at any time: a start in progress stops
    within :data:`POLL` seconds (:class:`Stopped`).
    """

    def __init__(self, path: Path, options: ServeOptions, view: View | None = None) -> None:
        self.path = path.resolve()
        self.options = options
        self.name = options.name or self.path.stem
        self.view: View = view or StartView(self.path.name, sys.stderr)
        # The code cells as they last ran to the end (read once; --watch renews them).
        self.cells: list[CodeCell] | None = None
        self.url: str | None = None
        self.token: str | None = None
        self.manager: KernelManager | None = None
        self.client: Any = None
        self.folder: str | None = None  # private: the connection file and IPC sockets
        self._running: str | None = None  # the id of the execute request in progress
        self._stopping = threading.Event()
        # The manager and the client have one user at a time: the start, then shutdown
        # (which may come from a console handler's thread while the start runs).
        self._lock = threading.Lock()

    @property
    def steps(self) -> int:
        """The start's steps: the kernel, each code cell, the server."""
        return len(self.read()) + 2

    def read(self) -> list[CodeCell]:
        if self.cells is None:
            self.cells = read_code_cells(self.path)
        return self.cells

    def start(self) -> None:
        self.launch()
        self.run()

    def launch(self) -> None:
        """Start the kernel process (with IPC channels where the platform has them)."""
        total = self.steps
        self.view.step(0, total, "starting the kernel")
        env = {**os.environ, "JPY_SESSION_NAME": str(self.path)}
        with self._lock:
            if self._stopping.is_set():
                raise Stopped
            raise_open_file_limit()  # before the launch: the kernel (and its server) inherits it
            self.folder = tempfile.mkdtemp(prefix="mcp-notebook-")
            self.manager = KernelManager(kernel_name="python3", **kernel_channels(self.folder))
            # The kernel's own stdout goes to our stderr: stdout may be a protocol stream.
            self.manager.start_kernel(
                env=env,
                cwd=str(self.path.parent),
                stdout=sys.stderr.fileno(),
                **kernel_popen_options(),
            )

    def run(self) -> None:
        """Wait for the kernel, run the notebook in it, and start its server."""
        with self._lock:
            if self.manager is None or self._stopping.is_set():
                raise Stopped
            cells, total = self.read(), self.steps
            self.client = self.manager.client()
            self.client.start_channels()
            self._wait_ready()
            # Not in the kernel's history: the code names the token.
            self._execute(_SETUP.format(options=self.pinned()), "setup", store_history=False)
            if self.options.debug_port is not None:
                port = int(self.options.debug_port)
                self._execute(_DEBUGGER.format(port=port), "debugger", store_history=False)
                self.view.output(f"The kernel's debugger (DAP) listens on 127.0.0.1:{port}\n")
            for index, cell in enumerate(cells):
                where = f"cell {index + 1} of {len(cells)}"
                self.view.step(index + 1, total, f"{where}: {first_line(cell.source)}")
                self._run_cell(index, cell, where)
            self.view.step(total - 1, total, "starting the server")
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
            "confirm": self.options.confirm,
        }
        if self.options.port is not None:
            options["port"] = self.options.port
        if self.options.token:
            options["token"] = self.options.token
        if self.options.oauth:
            options["oauth"] = dict(self.options.oauth)  # the secret by its variable's name
        return options

    def run_cell(
        self, index: int, cell: CodeCell, *, stop_on_error: bool = True, run: str | None = None
    ) -> None:
        """Execute code cell ``index`` of the notebook once the start is over (``serve
        --watch``): ``NotebookError`` if it fails, :class:`Stopped` once serve stops.
        ``run``: the token that ``interrupt(run)`` names to stop this cell only."""
        with self._lock:
            self._check_started()
            self._run_cell(index, cell, f"cell {cell.number}", stop_on_error=stop_on_error, run=run)

    def run_own(self, code: str, expressions: dict[str, str] | None = None) -> dict[str, Any]:
        """Run code of ours, not the notebook's, once the start is over: kept out of the
        kernel's history."""
        with self._lock:
            self._check_started()
            return self._execute(code, "mcp-notebook", expressions, store_history=False)

    def interrupt(self, run: str | None = None) -> None:
        """Interrupt the cell running now, from any thread (as Kernel > Interrupt does):
        it fails with KeyboardInterrupt; the kernel goes on. ``run``: only if it is the
        cell that ``run_cell(..., run=run)`` runs; the SIGINT is a no-op for anything else
        (the cell ended before it arrived)."""
        manager, folder = self.manager, self.folder
        if manager is None or not manager.is_alive():
            return
        if run is not None and folder is not None:
            _write_privately(os.path.join(folder, _INTERRUPT_REQUEST), run)
        manager.interrupt_kernel()

    def _check_started(self) -> None:
        if self.client is None or self._stopping.is_set():
            raise Stopped

    # -- talking to the kernel (with the lock held) --------------------------------------
    def _run_cell(
        self,
        index: int,
        cell: CodeCell,
        where: str,
        *,
        stop_on_error: bool = True,
        run: str | None = None,
    ) -> None:
        if self.options.watch:  # what was registered before it (kernel/reloading.py)
            args = repr(index)
            if run is not None and self.folder is not None:
                request = os.path.join(self.folder, _INTERRUPT_REQUEST)
                args += f", {run!r}, {request!r}"
            self._execute(_MARK.format(args=args), "mcp-notebook", store_history=False)
        self._execute(cell.source, where, stop_on_error=stop_on_error)

    def _wait_ready(self) -> None:
        """Until the kernel answers on its shell channel and publishes on IOPub (a
        subscriber misses what was published before it connected)."""
        client, deadline = self.client, time.monotonic() + READY_TIMEOUT
        while True:
            asked = client.kernel_info()
            attempt = time.monotonic() + 1.0
            while time.monotonic() < attempt:
                reply = self._receive(client.get_shell_msg, "the kernel's start", deadline)
                if reply is not None and reply["parent_header"].get("msg_id") == asked:
                    try:
                        client.get_iopub_msg(timeout=0.2)
                        return
                    except queue.Empty:
                        break  # IOPub not connected yet: ask again

    def _execute(
        self,
        code: str,
        where: str,
        expressions: dict[str, str] | None = None,
        *,
        store_history: bool = True,
        stop_on_error: bool = True,
    ) -> dict[str, Any]:
        client = self.client
        asked = client.execute(
            code,
            store_history=store_history,
            user_expressions=expressions or {},
            allow_stdin=False,  # nobody can answer input() in a headless kernel
            stop_on_error=stop_on_error,
        )
        self._running = asked
        deadline = time.monotonic() + self.options.startup_timeout
        busy = True
        while busy:
            message = self._receive(client.get_iopub_msg, where, deadline)
            if message is None or message["parent_header"].get("msg_id") != asked:
                continue
            if message["msg_type"] == "status":
                busy = message["content"]["execution_state"] != "idle"
            else:
                self._show(message)
        while True:
            reply = self._receive(client.get_shell_msg, where, deadline)
            if reply is not None and reply["parent_header"].get("msg_id") == asked:
                break
        self._running = None
        content = reply["content"]
        if content["status"] != "ok":
            trace = "\n".join(content.get("traceback") or [f"{content.get('ename')}"])
            problem = f"{content.get('ename', content['status'])}: {content.get('evalue', '')}"
            raise NotebookError(
                f"{self.path.name}: {where} failed:\n{trace}",
                f"{self.path.name}: {where} failed: {problem.rstrip(': ')}",
            )
        return reply

    def _receive(
        self, get: Callable[..., dict[str, Any]], where: str, deadline: float
    ) -> dict[str, Any] | None:
        """The next message of a channel, or None after :data:`POLL` seconds, having
        checked that nobody asked to stop and that the kernel lives."""
        try:
            return get(timeout=POLL)
        except queue.Empty:
            pass
        if self._stopping.is_set():
            raise Stopped
        assert self.manager is not None
        if not self.manager.is_alive():
            raise NotebookError(f"{self.path.name}: the kernel died during {where}")
        if time.monotonic() > deadline:
            raise NotebookError(f"{self.path.name}: {where} did not finish in time")
        self.view.tick()
        return None

    def _show(self, message: dict[str, Any]) -> None:
        content, kind = message["content"], message["msg_type"]
        if kind == "stream":
            self.view.output(content["text"])
        elif kind in ("execute_result", "display_data"):
            text = content.get("data", {}).get("text/plain")
            if text:
                self.view.output(text + "\n")

    def _interrupt_running_cell(self) -> None:
        """A start stopped mid-cell: interrupt the cell and let it end, so that the kernel
        shuts down idle (a busy one fails to send the cell's reply on closed sockets)."""
        running, self._running = self._running, None
        if running is None or self.manager is None or not self.manager.is_alive():
            return
        self.manager.interrupt_kernel()
        deadline = time.monotonic() + INTERRUPT_GRACE
        while time.monotonic() < deadline:
            try:
                message = self.client.get_iopub_msg(timeout=POLL)
            except queue.Empty:
                continue
            if message["parent_header"].get("msg_id") == running and (
                message["msg_type"] == "status" and message["content"]["execution_state"] == "idle"
            ):
                return

    # -- the kernel's life ---------------------------------------------------------------
    def alive(self) -> bool:
        manager = self.manager
        return manager is not None and manager.is_alive()

    def shutdown(self, hurry: bool = False) -> None:
        """Stop a start in progress, shut the kernel down (it removes its discovery file)
        and remove its private folder; a second call waits for the first and does
        nothing. ``hurry``: kill it if it has not exited after HURRIED_SHUTDOWN seconds
        (jupyter_client waits 5 s for a busy kernel)."""
        self._stopping.set()
        with self._lock:
            _on_a_loop_of_its_own(lambda: self._shut_down(hurry))

    def _shut_down(self, hurry: bool) -> None:  # under the lock
        if self.client is not None:
            self._interrupt_running_cell()
            self.client.stop_channels()
        if self.manager is not None and self.manager.has_kernel:
            if hurry:
                self.manager.shutdown_wait_time = HURRIED_SHUTDOWN
            self.manager.shutdown_kernel(now=False)
        self.manager = self.client = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def _on_a_loop_of_its_own(work: Callable[[], None]) -> None:
    """Run ``work``'s jupyter_client calls on a new event loop, closed after.

    jupyter_client's blocking calls run each on this thread's one loop. A Ctrl-C (or a
    closed console's interrupt of the main thread) that lands after such a call's result
    is in but before the loop took note leaves a callback on that loop that stops it: the
    next blocking call on it, the shutdown, would fail with "Event loop stopped before
    Future completed" and leave the kernel running. In an empty context jupyter_core
    makes a loop of its own for them.
    """
    previous = ensure_event_loop()  # the thread's loop, set again after (jupyter_core sets it)
    context = contextvars.Context()
    try:
        context.run(work)
    finally:
        for value in context.values():
            if isinstance(value, asyncio.AbstractEventLoop) and value is not previous:
                value.close()
        asyncio.set_event_loop(previous)


def _write_privately(path: str, text: str) -> None:
    """Write ``text`` to ``path`` whole (a reader sees the old file or the new one)."""
    temporary = path + ".writing"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(temporary, path)


def kernel_channels(folder: str) -> dict[str, Any]:
    """How the kernel's channels are reached, for ``KernelManager``: Unix sockets in
    ``folder`` (private to this user) where the platform has them, so no TCP port is
    open for them and none of their traffic is readable on the wire; TCP on loopback on
    Windows. The connection file (it holds the key) is in ``folder`` too."""
    options: dict[str, Any] = {"connection_file": os.path.join(folder, "kernel.json")}
    prefix = os.path.join(folder, "kernel")
    if sys.platform != "win32" and len(os.fsencode(prefix)) <= MAX_SOCKET_PREFIX:
        options.update(transport="ipc", ip=prefix)
    else:
        options.update(transport="tcp", ip="127.0.0.1")
    return options


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
