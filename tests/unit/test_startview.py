"""What `serve` shows on stderr while the notebook starts (startview.py), and how it reads
the notebook (notebookstart.read_code_cells): no kernel."""

from __future__ import annotations

import io
import json

import pytest

from mcp_notebook import startview
from mcp_notebook.notebookstart import NotebookError, read_code_cells, sets_instructions
from mcp_notebook.startview import GUTTER, StartView


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(startview.time, "monotonic", fake)
    return fake


def test_plain_lines_name_each_step_and_the_notebooks_output_hangs_under_its_cell(clock):
    stream = io.StringIO()
    view = StartView("nb.ipynb", stream, live=False)
    view.step(0, 4, "starting the kernel")
    view.step(1, 4, "cell 1 of 2: print('hi')")
    view.output("hi\nno newline yet")
    view.output(" ... now\n")
    view.step(2, 4, "cell 2 of 2: import torch")
    clock.now += 12
    view.tick()
    clock.now += 20
    view.tick()
    view.tick()  # nothing new to say yet
    view.finish("serving nb.ipynb over MCP stdio")
    assert stream.getvalue().splitlines() == [
        "mcp-notebook: nb.ipynb: starting the kernel",
        "mcp-notebook: nb.ipynb: cell 1 of 2: print('hi')",
        f"{GUTTER}hi",
        f"{GUTTER}no newline yet ... now",
        "mcp-notebook: nb.ipynb: cell 2 of 2: import torch",
        "mcp-notebook: nb.ipynb: cell 2 of 2: import torch: still running (10 s)",
        "mcp-notebook: nb.ipynb: cell 2 of 2: import torch: still running (30 s)",
        "mcp-notebook: serving nb.ipynb over MCP stdio (32.0 s)",
    ]


def test_on_a_terminal_a_bar_is_redrawn_in_place_and_output_goes_above_it(clock):
    stream = io.StringIO()
    view = StartView("nb.ipynb", stream, live=True)
    view.step(1, 4, "cell 1 of 2: x = 1")
    assert (
        stream.getvalue()
        == "\rmcp-notebook: nb.ipynb [#####...............] cell 1 of 2: x = 1  0 s"
    )
    clock.now += 3
    view.tick()
    assert stream.getvalue().endswith(
        "\rmcp-notebook: nb.ipynb [#####...............] cell 1 of 2: x = 1  3 s"
    )
    view.output("printed\n")
    view.finish("serving nb.ipynb over MCP stdio")
    shown = stream.getvalue().split("\r")[-1]  # what the line holds in the end
    assert shown == "mcp-notebook: serving nb.ipynb over MCP stdio (3.0 s)\n"
    bar = len("mcp-notebook: nb.ipynb [#####...............] cell 1 of 2: x = 1  3 s")
    assert f"\r{' ' * bar}\r{GUTTER}printed\n" in stream.getvalue()  # the bar erased first


def test_a_console_that_cannot_show_the_output_gets_escapes():
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    view = StartView("nb.ipynb", stream, live=False)
    view.output("caf\u00e9\n")
    assert raw.getvalue() == f"{GUTTER}caf\\xe9\n".encode()


def write(tmp_path, document) -> object:
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return path


def test_code_cells_are_read_without_nbformat(tmp_path):
    document = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "source": "# title", "metadata": {}},
            {"cell_type": "code", "source": ["x = 1\n", "y = 2"], "metadata": {}, "outputs": []},
            {"cell_type": "code", "source": "  \n", "metadata": {}, "outputs": []},
            {"cell_type": "raw", "source": "raw", "metadata": {}},
            {"cell_type": "code", "source": "mcp.instructions = 'hi'", "metadata": {}},
        ],
    }
    cells = read_code_cells(write(tmp_path, document))
    assert [cell.source for cell in cells] == ["x = 1\ny = 2", "mcp.instructions = 'hi'"]
    assert sets_instructions(cells) and not sets_instructions(cells[:1])


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"cells": 3}'])
def test_a_file_that_is_not_a_notebook_is_a_clear_error(tmp_path, text):
    with pytest.raises(NotebookError, match=r"nb\.ipynb is not a (readable )?notebook"):
        read_code_cells(write(tmp_path, text))
