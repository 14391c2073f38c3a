"""`serve --watch`, in process: which cells run again, what a re-run registers, and what
clients are told. The real processes are in tests/e2e/serve/test_serve_watch.py."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.kernel.live import VariableWatcher
from mcp_notebook.kernel.reloading import Reloads
from mcp_notebook.notebookfile import CodeCell, UnreadableNotebook, code_cells, first_change
from mcp_notebook.notebookstart import NotebookError
from mcp_notebook.registry import Tool
from mcp_notebook.watching import Watcher
from tests.waiting import wait_until

# -- which cells run again ---------------------------------------------------------------


def cells(*sources: str) -> list[CodeCell]:
    return [CodeCell(index + 1, source) for index, source in enumerate(sources)]


@pytest.mark.parametrize(
    ("old", "new", "first"),
    [
        (("a", "b", "c"), ("a", "b", "c"), None),  # same code: nothing runs
        (("a", "b", "c"), ("a", "B", "c"), 1),  # the changed cell and those after it
        (("a", "b", "c"), ("A", "b", "c"), 0),
        (("a", "b", "c"), ("a", "c"), 1),  # a deleted cell: from where it was
        (("a", "b", "c"), ("a", "b"), 2),  # the last one deleted: nothing runs, it unregisters
        (("a", "b"), ("a", "b", "c"), 2),  # appended: only the new one
        (("a", "b"), ("a", "x", "b"), 1),  # inserted
    ],
)
def test_the_first_changed_cell_and_all_after_it_run_again(old, new, first):
    assert first_change(cells(*old), cells(*new)) == first


def test_a_moved_number_is_no_change():
    # A markdown cell inserted above shifts the numbers, not the code.
    before = [CodeCell(1, "a"), CodeCell(2, "b")]
    after = [CodeCell(2, "a"), CodeCell(3, "b")]
    assert first_change(before, after) is None


def test_ipynb_code_cells_skip_markdown_and_empty_cells(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("   \n"),
        nbformat.v4.new_code_cell("y = x + 1"),
    ]
    path = tmp_path / "n.ipynb"
    nbformat.write(notebook, path)
    assert code_cells(path) == [CodeCell(2, "x = 1"), CodeCell(4, "y = x + 1")]


def test_a_percent_format_py_is_read_as_cells(tmp_path):
    path = tmp_path / "n.py"
    path.write_text(
        "# %% [markdown]\n# A title\n\n# %%\n%load_ext mcp_notebook\n\n"
        "# %%\n@mcp.tool\ndef add(a: int) -> int:\n    return a + 1\n"
    )
    found = code_cells(path)
    assert [c.source for c in found] == [
        "%load_ext mcp_notebook",
        "@mcp.tool\ndef add(a: int) -> int:\n    return a + 1",
    ]
    assert [c.number for c in found] == [2, 3]


def test_half_a_save_is_unreadable_not_a_crash(tmp_path):
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"cells": []})[:7])
    with pytest.raises(UnreadableNotebook, match="not a readable notebook"):
        code_cells(path)
    with pytest.raises(FileNotFoundError):
        code_cells(tmp_path / "gone.ipynb")


def test_a_save_cut_inside_a_character_is_unreadable_not_a_crash(tmp_path):
    path = tmp_path / "n.ipynb"
    whole = json.dumps({"cells": [{"cell_type": "code", "source": "s = 'é'"}]}, ensure_ascii=False)
    encoded = whole.encode()
    path.write_bytes(encoded[: encoded.index("é".encode()) + 1])  # half of the "é"
    with pytest.raises(UnreadableNotebook, match="not a readable notebook"):
        code_cells(path)


# -- what a re-run registers, and what is announced ---------------------------------------


class Notebook:
    """Cells as functions of the ``mcp`` object, run the way serve and --watch run them."""

    def __init__(self, *cells: Callable[[NotebookMCP], None]) -> None:
        self.mcp = NotebookMCP()
        self.reloads = Reloads(self.mcp)
        self.heard: list[tuple[str, str | None]] = []
        self.mcp.registry.subscribe(lambda kind, detail: self.heard.append((kind, detail)))
        self.cells = list(cells)
        self._run(0)
        self.heard.clear()

    def _run(self, first: int) -> None:
        for index in range(first, len(self.cells)):
            self.reloads.mark(index)
            self.cells[index](self.mcp)

    def reload(self, first: int, *cells: Callable[[NotebookMCP], None]) -> list[str]:
        """Replace the cells from ``first`` on with ``cells`` and run them again."""
        self.cells[first:] = cells
        self.reloads.begin(first)
        try:
            self._run(first)
        except Exception as exc:
            self.reloads.abort(f"failed: {exc}")
            raise
        return self.reloads.commit()

    def tools(self) -> dict[str, str | None]:
        return {name: t.description for name, t in self.mcp.registry.tools.items()}


def tool(name: str, description: str, result: str = "") -> Callable[[NotebookMCP], None]:
    def cell(mcp: NotebookMCP) -> None:
        def fn() -> str:
            return result

        fn.__name__ = name
        mcp.tool(description=description)(fn)

    return cell


def test_registering_the_same_definitions_again_announces_nothing():
    notebook = Notebook(tool("a", "A"), tool("b", "B"))
    announced = notebook.reload(1, tool("b", "B", result="a new body"))
    assert announced == [] and notebook.heard == []
    # ... yet the new function is the one served.
    assert notebook.mcp.registry.tools["b"].fn() == "a new body"


def test_a_changed_definition_is_announced_once_for_its_list():
    notebook = Notebook(tool("a", "A"), tool("b", "B"))
    assert notebook.reload(1, tool("b", "B, better")) == ["tools"]
    assert notebook.heard == [("tools", None)]
    assert notebook.tools() == {"a": "A", "b": "B, better"}


def test_a_deleted_cells_tool_goes_and_an_earlier_cells_tool_stays():
    notebook = Notebook(tool("a", "A"), tool("b", "B"), tool("c", "C"))
    notebook.reload(1, tool("c", "C"))  # cell "b" deleted
    assert notebook.tools() == {"a": "A", "c": "C"}
    notebook.reload(1)  # the last cell deleted: nothing runs, its tool goes
    assert notebook.tools() == {"a": "A"}


def test_a_later_cell_that_replaced_an_earlier_ones_tool_is_undone_when_deleted():
    notebook = Notebook(tool("a", "first"), tool("a", "second"))
    assert notebook.tools() == {"a": "second"}
    notebook.reload(1)  # the replacing cell is gone: the first definition is back
    assert notebook.tools() == {"a": "first"}


def test_a_failing_cell_leaves_the_last_good_registrations_and_nothing_is_announced():
    notebook = Notebook(tool("a", "A"), tool("b", "B"))

    def broken(mcp: NotebookMCP) -> None:
        tool("b", "half way")(mcp)
        mcp.prompt("half", "a prompt from half a run")
        raise ZeroDivisionError("division by zero")

    before = notebook.mcp.registry
    with pytest.raises(ZeroDivisionError):
        notebook.reload(1, broken)
    assert notebook.mcp.registry is before
    assert notebook.tools() == {"a": "A", "b": "B"} and not notebook.mcp.registry.prompts
    assert notebook.heard == []
    # The next good edit starts from the last good run, not from the failed one.
    assert notebook.reload(1, tool("b", "fixed")) == ["tools"]
    assert notebook.tools() == {"a": "A", "b": "fixed"}


def test_registrations_during_a_reload_stay_unseen_until_it_ends():
    seen: list[dict[str, str | None]] = []
    notebook = Notebook(tool("a", "A"))
    live = notebook.mcp.registry

    def looks(mcp: NotebookMCP) -> None:
        tool("b", "B")(mcp)
        seen.append({n: t.description for n, t in live.tools.items()})  # what a client lists

    notebook.reload(1, looks)
    assert seen == [{"a": "A"}]
    assert notebook.tools() == {"a": "A", "b": "B"}


# -- registrations from other threads while a reload runs (a timer, a watcher thread) ----


class Registering(threading.Thread):
    """A background thread registering a tool the way ``@mcp.tool`` does, in two steps:
    look ``mcp.registry`` up, then (once ``go`` is set) add the tool to it."""

    def __init__(self, mcp: NotebookMCP, name: str, *, early: bool = False) -> None:
        super().__init__(daemon=True)
        self.mcp, self.name = mcp, name
        self.looked_up, self.go, self.done = threading.Event(), threading.Event(), threading.Event()
        self.registry = mcp.registry if early else None  # looked up before the thread runs

    def run(self) -> None:
        registry = self.registry or self.mcp.registry
        self.looked_up.set()
        assert self.go.wait(30)
        registry.add_tool(Tool(lambda: "", self.name, description="from a thread"))
        self.done.set()

    def register(self) -> None:
        self.go.set()
        assert self.done.wait(30), "the thread did not register"


def test_a_thread_registering_in_the_copy_as_it_is_committed_lands_in_the_new_registry():
    notebook = Notebook(tool("a", "A"))
    thread = Registering(notebook.mcp, "late")

    def starts_the_thread(mcp: NotebookMCP) -> None:
        tool("b", "B")(mcp)
        thread.start()
        assert thread.looked_up.wait(30)  # it holds the copy the cells register into

    notebook.reload(1, starts_the_thread)  # ... and the commit hands the copy over
    thread.register()
    assert notebook.tools() == {"a": "A", "b": "B", "late": "from a thread"}


def test_a_thread_registering_in_the_live_registry_during_a_reload_is_kept_by_the_commit():
    notebook = Notebook(tool("a", "A"))
    live = notebook.mcp.registry
    thread = Registering(notebook.mcp, "meanwhile", early=True)  # looked up before begin
    thread.start()
    assert thread.looked_up.wait(30)

    def registers_meanwhile(mcp: NotebookMCP) -> None:
        tool("b", "B")(mcp)
        thread.register()
        assert "meanwhile" in live.tools  # clients see it at once, not at the commit

    notebook.reload(1, registers_meanwhile)
    assert notebook.tools() == {"a": "A", "b": "B", "meanwhile": "from a thread"}


def test_a_threads_registration_during_a_failed_reload_is_not_dropped_with_it():
    notebook = Notebook(tool("a", "A"))
    thread = Registering(notebook.mcp, "meanwhile")

    def fails(mcp: NotebookMCP) -> None:
        tool("b", "half way")(mcp)
        thread.start()
        thread.register()  # looks up mcp.registry now: the copy, from another thread
        raise RuntimeError("the cell fails")

    with pytest.raises(RuntimeError):
        notebook.reload(1, fails)
    assert notebook.tools() == {"a": "A", "meanwhile": "from a thread"}


def test_a_reload_remembers_each_updated_uri_once_and_forgets_them_at_the_end(monkeypatch):
    monkeypatch.setattr("mcp_notebook.kernel.reloading.MAX_UPDATES", 3)

    def updates(mcp: NotebookMCP) -> None:
        for n in range(1000):
            mcp.registry.resource_updated("resource://busy")  # a resource re-bound in a loop
            mcp.registry.resource_updated(f"resource://page/{n}")  # a template's URIs
        assert len(notebook.reloads._updates) == 3

    notebook = Notebook(lambda mcp: None)
    assert notebook.reload(1, updates) == [
        "updated:resource://busy",
        "updated:resource://page/0",
        "updated:resource://page/1",
    ]
    assert notebook.reloads._updates == {}


def test_resources_whose_cell_ran_again_are_updated_and_the_others_are_not():
    def resources(mcp: NotebookMCP) -> None:
        mcp.resource("v1", name="notes")

    def kept(mcp: NotebookMCP) -> None:
        mcp.resource("stays", name="kept")

    notebook = Notebook(kept, resources)
    announced = notebook.reload(1, resources)
    # Same listing (same size, same text length): no list_changed, but its content is new.
    assert announced == ["updated:resource://notes"]
    assert notebook.heard == [("updated", "resource://notes")]


def test_a_variable_a_re_run_cell_re_binds_is_announced_as_updated_at_the_end():
    namespace: dict = {}

    def serves(mcp: NotebookMCP) -> None:
        mcp.namespace = namespace
        mcp.resource(var="notes")

    def binds(text: str) -> Callable[[NotebookMCP], None]:
        def cell(mcp: NotebookMCP) -> None:
            namespace["notes"] = text
            watcher(mcp)  # IPython's post_run_cell hook, as the extension installs it

        return cell

    notebook = Notebook(serves, lambda mcp: None)
    watcher = VariableWatcher(notebook.mcp, namespace)
    binds("v1")(notebook.mcp)
    notebook.heard.clear()
    # Registered by the unchanged first cell; re-bound by the changed second one.
    assert notebook.reload(1, binds("v2")) == ["updated:resource://notes"]
    assert notebook.heard == [("updated", "resource://notes")]


def test_a_re_run_cells_mcp_start_and_stop_keep_the_running_server():
    notebook = Notebook(tool("a", "A"))
    calls: list[str] = []

    def starts(mcp: NotebookMCP) -> None:
        calls.append(repr(mcp.start(port=1)))  # would rebind and drop every session
        mcp.stop()

    notebook.reload(1, starts)
    assert calls == ["None"]  # not serving in this test: nothing to keep, nothing started
    assert "start" not in vars(notebook.mcp) and "stop" not in vars(notebook.mcp)


def test_a_failure_is_sent_to_clients_as_an_error_log(monkeypatch):
    notebook = Notebook(tool("a", "A"))
    logged: list[tuple] = []
    monkeypatch.setattr(notebook.mcp, "log", lambda *args: logged.append(args))

    def broken(mcp: NotebookMCP) -> None:
        raise RuntimeError("nope")

    with pytest.raises(RuntimeError):
        notebook.reload(1, broken)
    assert logged == [("error", "failed: nope", "mcp-notebook.watch")]
    with pytest.raises(ValueError, match="unknown log level"):
        NotebookMCP().log("loud", "x")


# -- the serve side: when to run what (watching.py), against a stand-in kernel -----------


class StandInKernel:
    """What watching.py asks of NotebookKernel, recorded; a cell with FAIL in it fails."""

    def __init__(self, path: Path, sources: list[str]) -> None:
        self.path = path
        self.cells = cells(*sources)
        self.ran: list[str] = []  # cell sources and our own calls, in order
        self.runs: list[str | None] = []  # the run token each cell ran with
        self.running = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def read(self) -> list[CodeCell]:
        return self.cells

    def run_own(self, code: str, expressions: dict[str, str] | None = None) -> dict:
        self.ran.append(code.split(".reloads.", 1)[-1])  # begin(1), commit(); None, abort('...')
        values = {
            name: {"status": "ok", "data": {"text/plain": "[]"}} for name in expressions or {}
        }
        return {"content": {"status": "ok", "user_expressions": values}}

    def run_cell(
        self, index: int, cell: CodeCell, *, stop_on_error: bool = True, run: str | None = None
    ) -> None:
        self.runs.append(run)
        self.running.set()
        self.release.wait(30)
        self.ran.append(cell.source)
        if "FAIL" in cell.source:
            raise NotebookError(f"cell {cell.number} failed:\nFAIL")


def percent(*sources: str) -> str:
    return "".join(f"# %%\n{source}\n\n" for source in sources)


@pytest.fixture
def stand_in(tmp_path):
    path = tmp_path / "n.py"
    path.write_text(percent("a", "b", "c"))
    return StandInKernel(path, ["a", "b", "c"])


def test_a_save_without_a_code_change_runs_nothing(stand_in):
    watcher = Watcher(stand_in)
    stand_in.path.write_text("# %% [markdown]\n# notes\n\n" + percent("a", "b", "c"))
    assert watcher.reload() is False and stand_in.ran == []


def test_a_change_runs_from_the_first_changed_cell(stand_in):
    watcher = Watcher(stand_in)
    stand_in.path.write_text(percent("a", "B", "c"))
    assert watcher.reload() is True
    assert stand_in.ran == ["begin(1)", "B", "c", "commit(); None"]
    assert [c.source for c in stand_in.cells] == ["a", "B", "c"]


def test_after_a_failure_the_failed_run_runs_again_even_if_the_file_goes_back(stand_in):
    watcher = Watcher(stand_in)
    stand_in.path.write_text(percent("a", "B", "FAIL"))
    watcher.reload()
    assert stand_in.ran[:3] == ["begin(1)", "B", "FAIL"] and stand_in.ran[3].startswith("abort(")
    assert "cell 3 failed" in stand_in.ran[3]
    assert [c.source for c in stand_in.cells] == ["a", "b", "c"]  # the last good run
    stand_in.ran.clear()
    stand_in.path.write_text(percent("a", "b", "c"))  # back to the last good code
    watcher.reload()
    # The namespace holds what "B" did: cell 2 on runs again.
    assert stand_in.ran == ["begin(1)", "b", "c", "commit(); None"]


def test_an_emptied_file_is_a_save_in_progress_and_runs_nothing(stand_in):
    watcher = Watcher(stand_in)
    stand_in.path.write_text("")  # truncated, not yet written
    assert watcher.reload() is False and stand_in.ran == []


def test_an_unreadable_save_warns_clients_and_runs_nothing(tmp_path):
    path = tmp_path / "n.ipynb"
    path.write_text("{")  # half a save
    kernel = StandInKernel(path, ["a"])
    assert Watcher(kernel).reload() is False
    assert len(kernel.ran) == 1 and kernel.ran[0].startswith("app.log('warning'")


def test_a_save_cut_inside_a_character_warns_clients_and_runs_nothing(tmp_path):
    path = tmp_path / "n.ipynb"
    path.write_bytes(b'{"cells": [{"cell_type": "code", "source": "s = \'\xc3')
    kernel = StandInKernel(path, ["a"])
    assert Watcher(kernel).reload() is False
    assert len(kernel.ran) == 1 and kernel.ran[0].startswith("app.log('warning'")


def test_a_save_while_a_reload_runs_is_run_after_it(stand_in):
    watcher = Watcher(stand_in)
    watcher.start()
    try:
        assert watcher.ready.wait(10)
        stand_in.release.clear()  # the next cell blocks until released
        stand_in.path.write_text(percent("a", "B", "c"))
        assert stand_in.running.wait(30), "the first reload did not start"
        replacement = stand_in.path.with_name("n.py.tmp")
        replacement.write_text(percent("a", "B", "C"))
        os.replace(replacement, stand_in.path)  # an editor's atomic save, mid-reload
        stand_in.release.set()
        wait_until(lambda: [c.source for c in stand_in.cells] == ["a", "B", "C"], "the second save")
    finally:
        watcher.stop()


def test_a_burst_of_saves_is_run_as_few_reloads_ending_with_the_last(stand_in):
    watcher = Watcher(stand_in)
    watcher.start()
    try:
        assert watcher.ready.wait(10)
        stand_in.release.clear()  # the first reload's cell blocks until released
        stand_in.path.write_text(percent("a", "b", "c = 0"))
        assert stand_in.running.wait(30), "the first reload did not start"
        for n in range(1, 10):  # an editor saving on every keystroke, meanwhile
            stand_in.path.write_text(percent("a", "b", f"c = {n}"))
        stand_in.release.set()
        wait_until(lambda: stand_in.cells[-1:] == [CodeCell(3, "c = 9")], "the last save")
        # The saves made during the first reload run as one more, however slowly they came
        # (ordered by the blocked cell, not by the clock).
        assert stand_in.ran.count("begin(2)") == 2
    finally:
        watcher.stop()
