"""`mcp-notebook serve NOTEBOOK --watch`: edit the file on disk while a client is connected.

Real processes: `serve` with a kernel, over HTTP and stdio, and the official SDK client,
which stays connected throughout. The notebook is saved the way editors save it (a new
file renamed over the old one, or rewritten in place).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from mcp.client import Client
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ToolsListChanged

from tests.conftest import Served, connect
from tests.serving import ServeProcess
from tests.stdio import module_params
from tests.waiting import DEADLINE, until, until_async

# A diagnostic tool of the test notebooks: how many GET streams (where notifications go)
# the server has open.
STREAMS = (
    "%load_ext mcp_notebook\n\n"
    "@mcp.tool\n"
    "def open_streams() -> int:\n"
    "    return sum('g' in s for s in mcp._transport.streams.values())"
)
START = "%mcp start"


def greet(text: str, description: str) -> str:
    return (
        f"@mcp.tool(description={description!r})\n"
        "def greet(name: str) -> str:\n"
        f"    return {text!r} + name"
    )


EXTRA = "@mcp.tool\ndef extra() -> str:\n    return 'extra'"


def save(path: Path, text: str, *, atomic: bool = True) -> None:
    """Save as editors do: a new file renamed over the old one, or in place."""
    if atomic:
        temporary = path.with_name(path.name + ".saving~")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    else:
        path.write_text(text, encoding="utf-8")


def ipynb(*sources: str) -> str:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# Watched")]
    notebook.cells += [nbformat.v4.new_code_cell(source) for source in sources]
    return nbformat.writes(notebook)


def percent(*sources: str) -> str:
    return "".join(f"# %%\n{source}\n\n" for source in sources)


class Heard:
    """What the client was told: notification methods in order, and log messages."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.logs: list[Any] = []

    async def on_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if method:
            self.methods.append(method)

    async def on_log(self, params: Any) -> None:
        # Only --watch's: over stdio the start's steps come as log messages too.
        if params.logger == "mcp-notebook.watch":
            self.logs.append(params)

    def tools_changed(self) -> int:
        return self.methods.count("notifications/tools/list_changed")

    async def next_tools_change(self, seen: int) -> None:
        await until(lambda: self.tools_changed() > seen, "notifications/tools/list_changed")


async def names(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


async def text_of(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result
    return result.content[0].text


async def eventually(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    """Ask the server until ``condition`` holds."""
    await until_async(condition, what, DEADLINE)


async def has_tool(client: Client, name: str) -> bool:
    return name in await names(client)


async def streams_open(client: Client) -> None:
    """The client's GET stream, where notifications go, opens after initialize."""

    async def opened() -> bool:
        return int(await text_of(client, "open_streams", {})) >= 1

    await eventually(opened, "the client's GET stream")


def stderr_lines(served: ServeProcess, needle: str) -> int:
    return sum(needle in line for line in served.stderr)


@pytest.fixture
def http_notebook(tmp_path):
    path = tmp_path / "watched.ipynb"
    save(path, ipynb(STREAMS, greet("hello ", "Greets."), EXTRA, START))
    served = ServeProcess(str(path), "--port", "0", "--no-auth", "--watch")
    url = served.wait_for_url()  # printed once the watch is armed
    assert stderr_lines(served, "Watching") == 1
    yield path, served, Served(kernel=None, url=url, token=None)
    served.stop()


async def test_http_edits_reach_the_connected_client_without_a_reconnect(http_notebook):
    path, served, endpoint = http_notebook
    heard = Heard()
    async with connect(
        endpoint, "legacy", message_handler=heard.on_message, logging_callback=heard.on_log
    ) as client:
        await streams_open(client)
        assert await names(client) == ["open_streams", "greet", "extra"]

        # A changed definition: clients are told, and call the new one.
        save(path, ipynb(STREAMS, greet("hi ", "Greets, briefly."), EXTRA, START))
        await heard.next_tools_change(0)
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["greet"].description == "Greets, briefly."
        assert await text_of(client, "greet", {"name": "ada"}) == "hi ada"

        # A deleted cell: its tool goes; the earlier, unchanged cells' tools stay.
        save(path, ipynb(STREAMS, greet("hi ", "Greets, briefly."), START), atomic=False)
        await heard.next_tools_change(1)
        assert await names(client) == ["open_streams", "greet"]

        # A new body under the same definition: served at once, and no list_changed,
        # since tools/list shows the same.
        reloads = stderr_lines(served, "reloaded; clients told: []")
        save(path, ipynb(STREAMS, greet("hey ", "Greets, briefly."), START))
        await until(
            lambda: stderr_lines(served, "reloaded; clients told: []") > reloads, "the reload"
        )
        assert await text_of(client, "greet", {"name": "ada"}) == "hey ada"

        # A failing edit: the last good tools stay served, and the client hears why.
        broken = greet("bye ", "Broken.") + "\nraise RuntimeError('broken edit')"
        save(path, ipynb(STREAMS, broken, START))
        await until(lambda: heard.logs, "the error log notification")
        log = heard.logs[0]
        assert log.level == "error" and log.logger == "mcp-notebook.watch"
        assert "cell 3 failed" in log.data and "RuntimeError: broken edit" in log.data
        assert "\x1b[" not in log.data  # no terminal colours in a client's log
        assert "RuntimeError" in "".join(served.stderr)
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert list(tools) == ["open_streams", "greet"]
        assert tools["greet"].description == "Greets, briefly."
        assert await text_of(client, "greet", {"name": "ada"}) == "hey ada"

        # An edit while a reload runs is not lost: it runs after.
        runs = stderr_lines(served, "running cells")
        slow = "import time\ntime.sleep(2)\n" + greet("hi again ", "Greets again.")
        save(path, ipynb(STREAMS, slow, START))
        await until(lambda: stderr_lines(served, "running cells") > runs, "the slow reload")
        late = "@mcp.tool\ndef late() -> str:\n    return 'made it'"
        save(path, ipynb(STREAMS, slow, late, START))
        await eventually(lambda: has_tool(client, "late"), "the later edit's tool")
        assert await text_of(client, "late", {}) == "made it"
        assert await text_of(client, "greet", {"name": "ada"}) == "hi again ada"

    # Only the tools list ever changed.
    assert {m for m in heard.methods if m.endswith("list_changed")} == {
        "notifications/tools/list_changed"
    }
    assert served.process.poll() is None  # still serving
    # What the reloads announced is said once, in the watch's log line, not also echoed
    # as if the notebook had printed it.
    assert not [line for line in served.stderr if "| ['tools']" in line]


@pytest.fixture
def percent_notebook(tmp_path):
    path = tmp_path / "watched.py"
    save(path, percent(STREAMS, greet("hello ", "Greets."), START))
    return path


async def test_stdio_percent_py_edits_reach_the_client(percent_notebook):
    path = percent_notebook
    heard = Heard()
    params = module_params("serve", str(path), "--transport", "stdio", "--watch")
    async with Client(
        params, mode="legacy", message_handler=heard.on_message, logging_callback=heard.on_log
    ) as client:
        await streams_open(client)
        assert await text_of(client, "greet", {"name": "ada"}) == "hello ada"

        added = "@mcp.tool\ndef added(x: int) -> int:\n    return x * 2"
        save(path, percent(STREAMS, greet("hello ", "Greets."), added, START))
        await heard.next_tools_change(0)
        assert await names(client) == ["open_streams", "greet", "added"]
        assert await text_of(client, "added", {"x": 21}) == "42"

        save(path, percent(STREAMS, greet("hi ", "Greets, briefly."), START), atomic=False)
        await heard.next_tools_change(1)
        assert await names(client) == ["open_streams", "greet"]  # the deleted cell's is gone
        assert await text_of(client, "greet", {"name": "ada"}) == "hi ada"

        save(path, percent(STREAMS, greet("bye ", "Broken.") + "\n1 / 0", START))
        await until(lambda: heard.logs, "the error log notification")
        assert "ZeroDivisionError" in heard.logs[0].data
        assert await names(client) == ["open_streams", "greet"]
        assert await text_of(client, "greet", {"name": "ada"}) == "hi ada"
        assert heard.tools_changed() == 2


def notes(text: str) -> str:
    return f"mcp.resource({text!r}, name='notes')"


async def test_http_both_eras_hear_exactly_what_changed(tmp_path):
    path = tmp_path / "notes.ipynb"
    same_greet = greet("hello ", "Greets.")
    save(path, ipynb(STREAMS, notes("first"), same_greet, START))
    served = ServeProcess(str(path), "--port", "0", "--no-auth", "--watch")
    endpoint = Served(kernel=None, url=served.wait_for_url(), token=None)
    heard = Heard()
    try:
        async with (
            connect(endpoint, "legacy", message_handler=heard.on_message) as legacy,
            connect(endpoint, "auto") as modern,  # 2026-07-28: a subscriptions/listen stream
        ):
            await streams_open(legacy)
            await legacy.subscribe_resource("resource://notes")
            async with modern.listen(
                tools_list_changed=True,
                resources_list_changed=True,
                resource_subscriptions=["resource://notes"],
            ) as events:
                # The resource's cell changes its content, not its listing (same name, same
                # size); the tool after it is registered again the same way.
                save(path, ipynb(STREAMS, notes("later"), same_greet, START))
                assert await asyncio.wait_for(events.__anext__(), DEADLINE) == ResourceUpdated(
                    uri="resource://notes"
                )
                await until(
                    lambda: "notifications/resources/updated" in heard.methods, "resources/updated"
                )
                notes_now = await legacy.read_resource("resource://notes")
                assert notes_now.contents[0].text == "later"

                # The tool's cell changes the tools list; the resource's cell does not run.
                save(path, ipynb(STREAMS, notes("later"), greet("hi ", "Greets, briefly."), START))
                assert await asyncio.wait_for(events.__anext__(), DEADLINE) == ToolsListChanged()
                await heard.next_tools_change(0)
                assert await text_of(modern, "greet", {"name": "ada"}) == "hi ada"
        changes = [m for m in heard.methods if m.startswith("notifications/")]
        assert changes == [
            "notifications/resources/updated",
            "notifications/tools/list_changed",
        ]
    finally:
        served.stop()


async def test_http_a_save_that_fixes_a_cell_that_never_ends_interrupts_it(http_notebook):
    path, served, endpoint = http_notebook
    async with connect(endpoint, "legacy") as client:
        endless = "import time\nwhile True:\n    time.sleep(0.05)"
        save(path, ipynb(STREAMS, greet("hello ", "Greets."), endless, START))
        await until(lambda: stderr_lines(served, "running cells 4-5") >= 1, "the endless reload")
        assert await names(client) == ["open_streams", "greet", "extra"]  # still answering
        fixed = "@mcp.tool\ndef fixed() -> str:\n    return 'it ends now'"
        save(path, ipynb(STREAMS, greet("hello ", "Greets."), fixed, START))
        await until(lambda: stderr_lines(served, "interrupting it") >= 1, "the interrupt")
        await eventually(lambda: has_tool(client, "fixed"), "the fixed cell's tool")
        assert await text_of(client, "fixed", {}) == "it ends now"
    assert served.process.poll() is None  # still serving


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes at a path are POSIX's")
async def test_http_a_named_pipe_in_place_of_the_notebook_does_not_end_the_watch(http_notebook):
    path, served, endpoint = http_notebook
    async with connect(endpoint, "legacy") as client:
        pipe = path.with_name(path.name + ".pipe~")
        os.mkfifo(pipe)
        os.replace(pipe, path)  # the notebook's name names a named pipe now, with no writer
        await until(lambda: stderr_lines(served, "is not a regular file") >= 1, "the pipe seen")
        assert await text_of(client, "greet", {"name": "you"}) == "hello you"  # still served
        after = "@mcp.tool\ndef after_pipe() -> str:\n    return 'read again'"
        save(path, ipynb(STREAMS, greet("hello ", "Greets."), EXTRA, after, START))
        await eventually(lambda: has_tool(client, "after_pipe"), "the next good save served")
        assert await text_of(client, "after_pipe", {}) == "read again"
        assert await text_of(client, "extra", {}) == "extra"
    assert served.process.poll() is None


def _slow_to_read(flags: dict[str, Path]) -> str:
    """A cell of the notebook's own: an input transformer that takes its time over a cell
    marked "# slow to read", as IPython does over a very large cell, before its code runs
    (the watch has armed its run, the cell's code has not started). It says where the
    watch's interrupt request goes, notes a KeyboardInterrupt that reaches it, and goes on
    once the test lets it."""
    reading, released, hit = (str(flags[n]) for n in ("reading", "released", "hit"))
    return (
        "import os, time\n"
        "from mcp_notebook.kernel.runinterrupts import interrupts as _watch\n\n"
        "def _slow_to_read(lines):\n"
        "    if '# slow to read\\n' in lines and not os.path.exists(" + repr(released) + "):\n"
        "        with open(" + repr(reading) + ", 'w') as flag:\n"
        "            flag.write(str(_watch.request))\n"
        "        try:\n"
        "            while not os.path.exists(" + repr(released) + "):\n"
        "                time.sleep(0.01)\n"
        "        except KeyboardInterrupt:\n"
        "            open(" + repr(hit) + ", 'w').close()\n"
        "            raise\n"
        "    return lines\n\n"
        "get_ipython().input_transformers_post.append(_slow_to_read)"
    )


async def test_http_an_interrupt_before_a_cells_code_runs_does_not_hang_the_watch(tmp_path):
    """A save lands while the kernel is still reading the reload's cell: the cell stops
    as its code starts, and the next good save is served; the old tools meanwhile."""
    flags = {n: tmp_path / n for n in ("reading", "released", "hit")}
    path = tmp_path / "watched.ipynb"
    save(path, ipynb(STREAMS, _slow_to_read(flags), greet("hello ", "Greets."), START))
    served = ServeProcess(str(path), "--port", "0", "--no-auth", "--watch")
    try:
        endpoint = Served(kernel=None, url=served.wait_for_url(), token=None)
        async with connect(endpoint, "legacy") as client:
            large = "# slow to read\n" + greet("hi ", "Greets, read slowly.")
            save(path, ipynb(STREAMS, _slow_to_read(flags), large, START))
            await until(flags["reading"].exists, "the reload reading its cell")
            request = Path(flags["reading"].read_text())
            assert await names(client) == ["open_streams", "greet"]  # still served
            fixed = "@mcp.tool\ndef fixed() -> str:\n    return 'served'"
            save(path, ipynb(STREAMS, _slow_to_read(flags), fixed, START))
            await until(lambda: stderr_lines(served, "interrupting it") >= 1, "the interrupt")
            # Taken by the kernel's handler (or, before the fix, raised in the transformer).
            await until(lambda: not request.exists() or flags["hit"].exists(), "the SIGINT handled")
            flags["released"].touch()
            await eventually(lambda: has_tool(client, "fixed"), "the fixed save served")
            assert await text_of(client, "fixed", {}) == "served"
            assert await text_of(client, "open_streams", {}) == "1"
            assert not flags["hit"].exists()  # IPython's reading was not cut short
        assert served.process.poll() is None
    finally:
        served.stop()


# -- the watch's interrupt lands late: a kernel served in this process, a Watcher driven by
# hand, so that the signal can be held back until the cell it meant has ended.


def _flag_tool(started: Path, may_end: Path) -> str:
    return (
        "%load_ext mcp_notebook\nimport os, time\n\n"
        "@mcp.tool\n"
        "def queued() -> str:\n"
        f"    open({str(started)!r}, 'w').close()\n"
        f"    while not os.path.exists({str(may_end)!r}):\n"
        "        time.sleep(0.01)\n"
        "    return 'done'"
    )


def _cell_until(running: Path, released: Path | None, label: str) -> str:
    wait = "True" if released is None else f"not os.path.exists({str(released)!r})"
    return (
        f"# {label}\nimport os, time\nopen({str(running)!r}, 'w').close()\n"
        f"while {wait}:\n    time.sleep(0.01)"
    )


@pytest.fixture
def kernel_in_process(tmp_path):
    from mcp_notebook.notebookkernel import NotebookKernel
    from mcp_notebook.notebookstart import ServeOptions

    flags = {n: tmp_path / n for n in ("running", "released", "started", "may_end")}
    path = tmp_path / "watched.ipynb"
    save(path, ipynb(_flag_tool(flags["started"], flags["may_end"]), "x = 1", START))
    kernel = NotebookKernel(path, ServeOptions(auth=False, watch=True))
    try:
        kernel.start()
        yield kernel, path, flags
    finally:
        kernel.shutdown(hurry=True)


async def test_an_interrupt_that_arrives_after_its_cell_ended_spares_the_queued_tool_call(
    kernel_in_process,
):
    from mcp_notebook.notebookkernel import _INTERRUPT_REQUEST
    from mcp_notebook.watching import Watcher

    kernel, path, flags = kernel_in_process
    tool = _flag_tool(flags["started"], flags["may_end"])
    watcher = Watcher(kernel)  # its threads are not started: the test is the watch thread
    save(path, ipynb(tool, _cell_until(flags["running"], flags["released"], "slow"), START))
    reload = asyncio.create_task(asyncio.to_thread(watcher.reload))
    await until(flags["running"].exists, "the reload's cell running")
    async with connect(Served(kernel=None, url=kernel.url, token=None), "legacy") as client:
        call = asyncio.create_task(client.call_tool("queued", {}))  # queued behind the cell
        # A save makes the running cell stale: the watcher decides to interrupt it, and the
        # SIGINT is held back until the cell has ended and the queued call runs.
        save(path, ipynb(tool, _cell_until(flags["running"], flags["released"], "edited"), START))
        decided: list[str | None] = []
        kernel.interrupt = decided.append  # type: ignore[method-assign]
        watcher._stale_run()
        del kernel.interrupt
        [run] = decided
        assert run is not None
        flags["released"].touch()  # the cell ends ...
        await until(flags["started"].exists, "the queued call running on the main thread")
        kernel.interrupt(run)  # ... and the signal arrives now
        request = Path(kernel.folder) / _INTERRUPT_REQUEST
        await until(lambda: not request.exists(), "the kernel taking the interrupt")
        flags["may_end"].touch()
        result = await call
        assert not result.is_error, result
        assert result.content[0].text == "done"  # not "interrupted"
        assert await reload is True and watcher._failed_from is None  # the cell ran whole


async def test_the_same_interrupt_still_stops_the_cell_it_means(kernel_in_process):
    from mcp_notebook.watching import Watcher

    kernel, path, flags = kernel_in_process
    tool = _flag_tool(flags["started"], flags["may_end"])
    watcher = Watcher(kernel)
    save(path, ipynb(tool, _cell_until(flags["running"], None, "endless"), START))
    reload = asyncio.create_task(asyncio.to_thread(watcher.reload))
    await until(flags["running"].exists, "the endless cell running")
    save(path, ipynb(tool, "x = 2", START))  # the fix
    watcher._stale_run()  # the interrupt, sent at once
    assert await reload is True and watcher._failed_from == 1  # cell 2 was interrupted
    assert await asyncio.to_thread(watcher.reload) is True and watcher._failed_from is None


def skill_notebook(words: str) -> str:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell(f"## How to use\n\n{words}"),
        nbformat.v4.new_code_cell(
            "%load_ext mcp_notebook\n"
            'mcp.skill("how-to", description="Use it.", from_cells={"heading": "How to use"})'
        ),
        nbformat.v4.new_code_cell(START),
    ]
    return nbformat.writes(notebook)


async def test_http_a_markdown_edit_remakes_the_skill_made_from_it(tmp_path):
    """Only the markdown changes: the cell that makes the skill runs again, its digest
    changes, and a 2026-07-28 client hears that the resources list changed."""
    path = tmp_path / "skill.ipynb"
    save(path, skill_notebook("Same length A."))
    served = ServeProcess(str(path), "--port", "0", "--no-auth", "--watch")
    endpoint = Served(kernel=None, url=served.wait_for_url(), token=None)
    uri = "skill://how-to/SKILL.md"
    try:
        async with connect(endpoint, "auto") as client:
            before = (await client.read_resource(uri)).contents[0].text
            assert "Same length A." in before
            async with client.listen(resources_list_changed=True) as events:
                save(path, skill_notebook("Same length B."))  # same size, other bytes
                event = await asyncio.wait_for(events.__anext__(), DEADLINE)
                assert event == ResourcesListChanged()
            after = (await client.read_resource(uri)).contents[0].text
            assert "Same length B." in after and len(after) == len(before)
    finally:
        served.stop()
