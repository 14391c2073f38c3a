"""Calls on the kernel thread, each in a context of its own: output capture, %debug, replay,
and Jupyter's Interrupt button.

A tool runs on the kernel loop between cells (DESIGN.md §3). Left alone, its ``print()``
would land under whatever cell ran last. Here each call runs in a copy of the kernel's
context in which ``_CALL`` names the call's record; the kernel's stdout/stderr and display
publisher look at it and append to ``record.output`` (nbformat output dicts, which an
``ipywidgets.Output`` renders) instead of publishing. Outside calls nothing changes.

The context does not get a parent header of its own (``set_thread_parent``): that cost
30-60 µs per call on a small VM, and what it would re-route is not output anyway. A C
library writing to the file descriptor reaches the kernel through the kernel's pipe
reader thread, which has its own context; comm messages and ``input()`` of a tool go
where those of a thread the tool started would go.

Interrupt: ipykernel ignores SIGINT between cells (``SIG_IGN``, set at start) and installs
Python's ``default_int_handler`` only while it handles a cell (``pre_handler_hook``), so a
tool, which runs between cells, could not be interrupted. When the first call runs on the
kernel's main thread, :class:`_Interrupts` puts a handler of its own in place of SIG_IGN (it
does nothing while no call runs): a tool whose code runs gets ``KeyboardInterrupt`` where it
is, as a cell would (an async one too, if it blocks without awaiting); async tools that wait
are cancelled at their ``await``. Either ends as
:class:`~mcp_notebook.protocol.calls.Interrupted`: the client gets a tool error (a JSON-RPC
error for resources and prompts), the history and the monitor show "interrupted", and the
server carries on. A cell that runs meanwhile installs its own
handler and puts ours back after it: an Interrupt during a cell interrupts the cell, and
calls queued behind the cell keep waiting (they have not started; they run after it).
``serve --watch``'s interrupt of a reload cell is a no-op here (``runinterrupts.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import signal
import sys
import threading
import weakref
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from ..protocol import CallRecord, LoopExecutor
from ..protocol.calls import Interrupted
from ..protocol.executor import settle
from ..protocol.queueing import CellWatch
from .breaks import BREAKS
from .runinterrupts import interrupts

if TYPE_CHECKING:  # typeshed has no stub for _signal; it has the functions of `signal`
    _signals = signal
else:
    try:  # the C module under `signal`: 15 times faster, without enum conversions per call
        import _signal as _signals
    except ImportError:  # pragma: no cover - other Pythons
        _signals = signal
_SIGINT = int(signal.SIGINT)

_CALL: contextvars.ContextVar[CallRecord | None] = contextvars.ContextVar(
    "mcp_notebook_call", default=None
)
MAX_TEXT = 200_000  # characters of stream output kept per call: history must stay bounded
_TRUNCATED = "\n[... output truncated ...]\n"
# display_id -> index in record.output, for update_display() during a call.
_display_ids: weakref.WeakKeyDictionary[CallRecord, dict[str, int]] = weakref.WeakKeyDictionary()


def current_call() -> CallRecord | None:
    """The call whose user code is running in this context, if any."""
    return _CALL.get()


# -- hooks on the kernel's streams and display publisher -------------------------------
def install(shell: Any) -> None:
    """Hook ``display()`` of this kernel once (idempotent); streams are hooked per call."""
    publisher = getattr(shell, "display_pub", None)
    register = getattr(publisher, "register_hook", None)
    if register is not None and _display_hook not in getattr(publisher, "_hooks", []):
        register(_display_hook)  # ipykernel's hooks are per thread: this is the kernel's


def _hook_streams() -> None:
    """Tee stdout and stderr, unless they are teed already.

    Done before each call, not once: IPython patches ``write`` the same way around every
    cell and puts back what it found, which drops a patch made during a cell.
    """
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not getattr(stream.write, "_mcp_tee", False):
            # An instance attribute: the stream object (and isinstance checks) stay as they are.
            stream.write = _tee(stream.write, name)


def _tee(write: Callable[[str], Any], name: str) -> Callable[[str], Any]:
    def tee(text: str) -> Any:
        record = _CALL.get()
        if record is None:
            return write(text)
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        _append_text(record, name, text)
        return len(text)

    tee._mcp_tee = True  # type: ignore[attr-defined]
    return tee


def _append_text(record: CallRecord, name: str, text: str) -> None:
    used = sum(len(o.get("text", "")) for o in record.output if o["output_type"] == "stream")
    if used >= MAX_TEXT:
        return
    if used + len(text) > MAX_TEXT:
        text = text[: MAX_TEXT - used] + _TRUNCATED
    last = record.output[-1] if record.output else None
    if last is not None and last["output_type"] == "stream" and last["name"] == name:
        last["text"] += text
    else:
        record.output.append({"output_type": "stream", "name": name, "text": text})
    _changed(record)


def _display_hook(message: dict[str, Any]) -> dict[str, Any] | None:
    """Keep display messages of a call in its record; let all others through."""
    record = _CALL.get()
    if record is None:
        return message
    kind, content = message["header"]["msg_type"], message["content"]
    if kind == "clear_output":
        record.output.clear()
        _display_ids.pop(record, None)
    elif kind in ("display_data", "update_display_data"):
        output = {
            "output_type": "display_data",
            "data": content.get("data", {}),
            "metadata": content.get("metadata", {}),
        }
        display_id = (content.get("transient") or {}).get("display_id")
        known = _display_ids.setdefault(record, {})
        if kind == "update_display_data":
            if display_id in known and known[display_id] < len(record.output):
                record.output[known[display_id]] = output
        else:
            if display_id:
                known[display_id] = len(record.output)
            record.output.append(output)
    else:
        return message
    _changed(record)
    return None  # used: nothing goes out under the last cell


def _changed(record: CallRecord) -> None:
    if record.log is not None:
        record.log.notify(record)  # monitors re-render on their own schedule


# -- the executor ----------------------------------------------------------------------
class CapturingExecutor(LoopExecutor):
    """A LoopExecutor that runs every call's user code in a context of its own."""

    def __init__(self, loop: asyncio.AbstractEventLoop, cells: CellWatch | None = None) -> None:
        super().__init__(loop, cells)
        # Our SIGINT handler from the end of the cell that starts the server on: a cell
        # then saves and puts back ours, and a tool that starts during a cell and outlives
        # it can be interrupted after it.
        with contextlib.suppress(RuntimeError):  # a closed loop: no calls will run
            loop.call_soon_threadsafe(_interrupts.install)

    @staticmethod
    def prepare(work: Callable[[], Any], record: CallRecord) -> Callable[[], Any]:
        return partial(_in_own_context, work, record)

    @staticmethod
    def may_pause(record: CallRecord) -> bool:
        """Whether ``record``'s call may stop in the debugger (%mcp break on its tool)."""
        return BREAKS.key(record) is not None

    @staticmethod
    def interrupt(record: CallRecord) -> bool:
        """Interrupt ``record``'s synchronous code if it runs now on the kernel's main
        thread, as Kernel > Interrupt would (a cancelled task); False if it does not."""
        return _interrupts.interrupt_call(record)


def _in_own_context(work: Callable[[], Any], record: CallRecord) -> Any:
    return contextvars.copy_context().run(_begin, work, record)


def _begin(work: Callable[[], Any], record: CallRecord) -> Any:
    _hook_streams()
    _CALL.set(record)
    watching = _interrupts.enter()
    outer, _interrupts.running = _interrupts.running, record if watching else None
    release = BREAKS.arm(record)  # %mcp break: a breakpoint on the tool's first line
    try:
        value = _run_sync(work)
    except BaseException as exc:
        remember_failure(exc)
        if release is not None:
            release()
        raise
    finally:
        _interrupts.running = outer
    if release is not None and not inspect.isawaitable(value):
        release()
    if inspect.isawaitable(value):
        # Created here, the task copies this context: output after an await is the call's too.
        task = asyncio.ensure_future(_finish(value, release))
        if watching:
            _interrupts.watch(task)
        return task
    return value


def _run_sync(work: Callable[[], Any]) -> Any:
    """Run a call's synchronous part; SIGINT raises KeyboardInterrupt only inside this."""
    try:
        return work()
    except KeyboardInterrupt as exc:
        raise Interrupted() from exc


async def _finish(awaitable: Any, release: Callable[[], None] | None = None) -> Any:
    """An async call's task. SIGINT raises KeyboardInterrupt in here while the tool's code
    runs without awaiting (``time.sleep``, a loop): it ends as Interrupted, here, so that
    asyncio never sees a KeyboardInterrupt (it would stop the kernel's loop)."""
    try:
        return await settle(awaitable)
    except KeyboardInterrupt:
        raise Interrupted() from None
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and _interrupts.was_interrupted(task):
            if hasattr(task, "uncancel"):  # Python 3.11+: the cancel is handled here
                task.uncancel()
            raise Interrupted() from None
        raise
    except BaseException as exc:
        remember_failure(exc)
        raise
    finally:
        if release is not None:
            release()  # the async tool's body ran (or failed): the breakpoint goes


class _Interrupts:
    """SIGINT stops the calls running on the kernel's main thread (see the module's doc)."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[Any]] = set()
        self.interrupted: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
        self.running: CallRecord | None = None  # whose synchronous code runs on main now
        self.target: CallRecord | None = None  # the one call a SIGINT of ours is meant for

    def enter(self) -> bool:
        """A call starts on this thread; False if signals cannot be handled here.

        Our handler goes in once, in place of the kernel's SIG_IGN, and stays: with no call
        running it does nothing, as SIG_IGN would. Never putting anything back keeps us out
        of ipykernel's own save and restore around each cell (``pre_handler_hook``,
        ``post_handler_hook``): a handler saved per call could be restored after a cell
        that saved it, leaving ``default_int_handler`` between cells (an Interrupt then
        stops the kernel's loop). During a cell its handler stays: the cell is interrupted.
        """
        if threading.current_thread() is not threading.main_thread():
            return False
        self.install()
        return True

    def install(self) -> None:
        """Put our handler in place of SIG_IGN (on the main thread only)."""
        if threading.current_thread() is threading.main_thread():
            current = _signals.getsignal(_SIGINT)
            if current is not _on_sigint and _ignored(current):
                _signals.signal(_SIGINT, _on_sigint)

    def watch(self, task: asyncio.Task[Any]) -> None:
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def was_interrupted(self, task: asyncio.Task[Any]) -> bool:
        return task in self.interrupted

    def interrupt_call(self, record: CallRecord) -> bool:
        """From another thread: SIGINT the main thread for this one call (a cancelled
        task). The handler checks again that it still runs, and else does nothing."""
        main = threading.main_thread().ident
        if self.running is not record or main is None:
            return False
        self.target = record
        kill = getattr(signal, "pthread_kill", None)  # wakes a sleep on the main thread
        if kill is not None:
            kill(main, _SIGINT)
        else:  # Windows: Python runs the handler on the main thread all the same
            signal.raise_signal(_SIGINT)
        return True

    def interrupt(self, frame: Any) -> None:
        """In the signal handler: stop the call running now, or the async ones waiting."""
        target, self.target = self.target, None
        if interrupts.between_cells():
            return  # serve --watch meant a reload cell, which has ended: nothing is touched
        if target is not None and self.running is not target:
            return  # meant for one call, which has ended since: nothing else is touched
        while frame is not None:
            code = frame.f_code
            if code is _run_sync.__code__ or code is _finish.__code__:
                raise KeyboardInterrupt  # a call's own code runs: stop it where it is
            frame = frame.f_back
        tasks = [t for t in self.tasks if not t.done()]
        if tasks:
            # Cancelling from the loop, not from inside whatever the handler interrupted.
            tasks[0].get_loop().call_soon_threadsafe(self._cancel, tasks)

    def _cancel(self, tasks: list[asyncio.Task[Any]]) -> None:
        for task in tasks:
            if not task.done():
                self.interrupted.add(task)
                task.cancel()


def _ignored(handler: Any) -> bool:
    return handler is not None and not callable(handler) and handler == signal.SIG_IGN


_interrupts = _Interrupts()


def _on_sigint(signum: int, frame: Any) -> None:
    _interrupts.interrupt(frame)


# -- %debug and replay -----------------------------------------------------------------
def remember_failure(exc: BaseException) -> None:
    """Make ``%debug`` open this exception, as if a cell had raised it."""
    if isinstance(exc, (asyncio.CancelledError, GeneratorExit, Interrupted)):
        return
    if exc.__traceback__ is None:
        return
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, exc.__traceback__
    if sys.version_info >= (3, 12):
        sys.last_exc = exc
    shell = _shell()
    if shell is not None and hasattr(shell, "InteractiveTB"):
        # The traceback of the last failed cell would win over sys.last_traceback.
        shell.InteractiveTB.tb = None


def debug(record: CallRecord) -> None:
    """Open the post-mortem debugger on a failed call's exception."""
    error = record.error
    if error is None or error.__traceback__ is None:
        raise LookupError(f"call #{record.id} has no traceback to debug ({record.status})")
    remember_failure(error)
    shell = _shell()
    if shell is None:
        raise RuntimeError("the debugger needs IPython")
    shell.debugger(force=True)


def replay(app: Any, record: CallRecord) -> Any:
    """Run the current definition of the call's tool, prompt or resource with its arguments.

    Returns what the function returns (an awaitable for an async one: ``await`` it); its
    output and exceptions go to the cell that replays it. A ``Context`` parameter gets
    None: no client is on the line.
    """
    if "arguments" in record.abbreviated:
        raise ValueError(
            f"call #{record.id} cannot be replayed: the history kept only an abbreviated "
            "copy of its arguments (see mcp.calls.max_call_bytes, %mcp history)"
        )
    registry, arguments = app.registry, dict(record.arguments)
    if record.method == "tools/call":
        tool = registry.tools.get(record.target)
        if tool is None:
            raise LookupError(f"no tool {record.target!r} is registered now")
        return tool.invoke(arguments, {})
    if record.method == "prompts/get":
        prompt = registry.prompts.get(record.target)
        if prompt is None:
            raise LookupError(f"no prompt {record.target!r} is registered now")
        return prompt.render(arguments)
    if record.method == "resources/read":
        found = registry.find_resource(record.target)
        if found is None:
            raise LookupError(f"nothing serves {record.target!r} now")
        component, values = found
        if values is None:
            return component.reader()
        if hasattr(component, "fn") and hasattr(component, "signature"):
            return component.fn(**component.signature.convert(values))
        return component.read(record.target, values)
    raise ValueError(f"a {record.method} call cannot be replayed")


def _shell() -> Any:
    # IPython is imported already wherever calls are captured; elsewhere there is no shell.
    ipython = sys.modules.get("IPython.core.getipython")
    return None if ipython is None else ipython.get_ipython()
