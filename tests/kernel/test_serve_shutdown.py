"""`serve`'s kernel shuts down after a Ctrl-C cut one of jupyter_client's blocking calls
short: the loop those calls run on is left with a callback that stops it."""

from __future__ import annotations

import asyncio

import pytest
from jupyter_core.utils import ensure_event_loop, run_sync

from mcp_notebook import discovery
from mcp_notebook.notebookkernel import NotebookKernel
from mcp_notebook.notebookstart import ServeOptions
from tests.platforms import exited, write_notebook


def interrupt() -> None:
    raise KeyboardInterrupt  # what serve's SIGINT handler raises on the main thread


def a_blocking_call_interrupted_after_its_result() -> None:
    """Ctrl-C lands after a blocking call's coroutine returned and before its loop noted
    the result: the loop keeps the callback that would have stopped it."""
    loop = ensure_event_loop()

    async def returns_then_interrupted() -> bool:
        loop.call_soon(interrupt)  # runs before the loop's own note of the result
        return True

    with pytest.raises(KeyboardInterrupt):
        run_sync(returns_then_interrupted)()


def test_the_kernel_shuts_down_after_an_interrupted_blocking_call(runtime_dir, tmp_path):
    kernel = NotebookKernel(write_notebook(tmp_path, "x = 1"), ServeOptions(port=0, auth=False))
    kernel.start()
    assert kernel.manager is not None and kernel.manager.provisioner is not None
    pid = kernel.manager.provisioner.pid
    assert [record.pid for record in discovery.running()] == [pid]
    loop = ensure_event_loop()
    try:
        a_blocking_call_interrupted_after_its_result()
        kernel.shutdown()  # the first blocking call after the interrupt
        assert exited(pid)
        assert discovery.running() == []
        assert kernel.folder is None
        # The thread's own loop is still the one jupyter_client uses here, and open.
        assert ensure_event_loop() is loop and not loop.is_closed()
    finally:
        kernel.shutdown()
        with pytest.raises(RuntimeError):  # the stale stop, spent so later tests are clean
            loop.run_until_complete(asyncio.sleep(0))
