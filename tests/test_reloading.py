"""`serve --watch`, in process: which cells run again, what a re-run registers, and what
clients are told. The real processes are in tests/test_serve_watch.py."""

from __future__ import annotations

import json
from collections.abc import Callable

import nbformat
import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.kernel.reloading import Reloads
from mcp_notebook.notebookfile import CodeCell, UnreadableNotebook, code_cells, first_change

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
