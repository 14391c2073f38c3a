"""``mcp-notebook serve``: run a notebook in a fresh kernel (notebookkernel.py) and keep
its server up, over stdio or Streamable HTTP. stdout stays free for protocols: the start
is shown on stderr.

Over stdio the client is answered from the first moment: the kernel starts and the
notebook runs on a thread of their own while the bridge reads stdin, answers the
handshake and holds the rest until the notebook serves (bridge/held.py).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from . import stopping
from ._version import __version__
from .exposure import who_can_reach
from .notebookkernel import NotebookKernel
from .notebookstart import NotebookError, ServeOptions, Stopped, View, sets_instructions
from .startview import StartView
from .threads import start_thread
from .transports.security import new_token

if TYPE_CHECKING:
    from .bridge import Bridge
    from .bridge.startup import Startup

logger = logging.getLogger(__name__)

SETTLE_TIMEOUT = 10.0  # seconds for requests in flight to be answered when the kernel dies


# -- stdio ---------------------------------------------------------------------------------
class _Reporter:
    """The start's steps, shown on stderr and, once the bridge exists, told to it."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.startup: Startup | None = None

    def step(self, done: int, total: int, text: str) -> None:
        self.view.step(done, total, text)
        if self.startup is not None:
            from .bridge.startup import Step

            self.startup.advance(Step(done, total, text))

    def output(self, text: str) -> None:
        self.view.output(text)

    def tick(self) -> None:
        self.view.tick()

    def finish(self, text: str) -> None:
        self.view.finish(text)


# Called once the notebook has run; returns what stops it (watching.watch for --watch).
OnReady = Callable[["NotebookKernel"], Callable[[], None]]


def serve_stdio(path: Path, options: ServeOptions, on_ready: OnReady | None = None) -> int:
    """Serve MCP on this process's stdin/stdout: the notebook's kernel behind the bridge."""
    # The kernel's endpoint is private to this process: loopback, any port, its own token.
    private = ServeOptions(
        host="127.0.0.1",
        port=0,
        token=new_token(),
        name=options.name,
        startup_timeout=options.startup_timeout,
        watch=options.watch,
        dispatcher=options.dispatcher,
        confirm=options.confirm,
    )
    reporter = _Reporter(StartView(path.name, sys.stderr))
    kernel = NotebookKernel(path, private, reporter)
    try:
        cells = kernel.read()
    except NotebookError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    stopped = threading.Event()
    stopper = _stop_on_request(kernel, stopped)
    attached = threading.Event()  # the bridge exists: the start may report to it
    bridge: list[Bridge] = []
    stops: list[Callable[[], None]] = []  # what on_ready started, to stop at the end
    start_thread(
        _run_notebook,
        args=(kernel, reporter, attached, bridge, stopped, on_ready, stops),
        name="notebook-start",
    )
    try:
        # While the kernel boots: the bridge, and the answers that need no notebook.
        from .bridge import Bridge, protocol_stdout
        from .bridge.startup import LateTarget, Startup, Step
        from .protocol.lifecycle import Identity

        output = protocol_stdout()
        identity = None if sets_instructions(cells) else Identity(kernel.name, __version__)
        startup = Startup(kernel.name, identity)
        startup.advance(Step(0, kernel.steps, "starting the kernel"))
        bridge.append(Bridge(LateTarget(startup), output, startup=startup))
        reporter.startup = startup
        attached.set()
        bridge[0].run(sys.stdin.buffer)
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        for stop in stops:
            stop()
        _shut_down(kernel, stopped, stopper)


def _run_notebook(
    kernel: NotebookKernel,
    reporter: _Reporter,
    attached: threading.Event,
    bridge: list[Bridge],
    stopped: threading.Event,
    on_ready: OnReady | None,
    stops: list[Callable[[], None]],
) -> None:
    """The start, on its own thread; then it watches the kernel."""
    try:
        try:
            kernel.launch()
        finally:
            attached.wait()  # the bridge must exist to hear how the start ends
        kernel.run()
    except Stopped:
        return
    except Exception as exc:
        if stopped.is_set():
            return  # stopped on purpose, while the kernel went: nothing failed
        if not isinstance(exc, NotebookError):
            logger.exception("the notebook could not start")
            exc = NotebookError(f"{kernel.path.name}: could not start: {exc}")
        _fail_start(kernel, reporter, bridge[0], stopped, exc)
    assert reporter.startup is not None and kernel.url is not None
    reporter.finish(f"Serving {kernel.path.name} over MCP stdio")
    if on_ready is not None:  # before the held requests go: e.g. no save is missed
        stops.append(on_ready(kernel))
    if not reporter.startup.ready(kernel.url, kernel.token):
        return  # the client went away meanwhile: serve is stopping
    _exit_with_kernel(kernel, stopped, bridge[0])


def _fail_start(
    kernel: NotebookKernel,
    reporter: _Reporter,
    bridge: Bridge,
    stopped: threading.Event,
    error: NotebookError,
) -> NoReturn:
    """Every request that waited gets its error; then serve ends with status 1."""
    reporter.finish(f"{kernel.path.name} did not start")
    print(str(error), file=sys.stderr, flush=True)
    assert reporter.startup is not None
    reporter.startup.fail(f"mcp-notebook serve: {error.summary}")
    bridge.settle(SETTLE_TIMEOUT)
    stopped.set()
    kernel.shutdown()
    sys.stderr.flush()
    os._exit(1)


def _exit_with_kernel(kernel: NotebookKernel, stopped: threading.Event, bridge: Any) -> None:
    while kernel.alive() and not stopped.is_set():
        time.sleep(0.5)
    if stopped.is_set():
        return
    print("The kernel died; stopping.", file=sys.stderr, flush=True)
    # Requests in flight fail as their connections break: let them be answered first.
    bridge.settle(SETTLE_TIMEOUT)
    os._exit(1)


# -- HTTP ----------------------------------------------------------------------------------
def serve_http(path: Path, options: ServeOptions, on_ready: OnReady | None = None) -> int:
    kernel = NotebookKernel(path, options)
    stopped = threading.Event()
    stopper = _stop_on_request(kernel, stopped)
    stop_ready = None
    try:
        kernel.start()
        kernel.view.finish(f"{path.name} ran")
        stop_ready = on_ready(kernel) if on_ready else None
        print(f"Serving {path} over MCP Streamable HTTP at {kernel.url}", file=sys.stderr)
        if kernel.token:
            print(f"Token: {kernel.token}", file=sys.stderr)
        if options.oauth:
            issuer = options.oauth.get("issuer")
            print(f"OAuth: access tokens of {issuer} for this resource", file=sys.stderr)
        reach = who_can_reach(options.host, _port(kernel.url), kernel.token, bool(options.oauth))
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
        kernel.view.finish(f"{path.name} did not start")
        print(str(exc), file=sys.stderr)
        return 1
    except (KeyboardInterrupt, Stopped):
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
