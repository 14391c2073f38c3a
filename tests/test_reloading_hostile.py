"""`serve --watch` fed files a hostile (or unlucky) editor saves: each is "cannot be read,
still serving" (clients warned), never an exception out of the reload."""

from __future__ import annotations

import json

import pytest

from mcp_notebook.notebookfile import UnreadableNotebook, code_cells
from mcp_notebook.watching import Watcher

from .test_reloading import StandInKernel

ODD_FILES = {
    "nested past the parser's recursion limit": "[" * 100_000 + "]" * 100_000,
    "an old format nbformat cannot validate": json.dumps({"nbformat": 3, "cells": []}),
    "a cell source that is not text": json.dumps(
        {"nbformat": 4, "cells": [{"cell_type": "code", "source": ["a", 5]}]}
    ),
    "cells that are not a list": json.dumps({"nbformat": 4, "cells": {"a": 1}}),
}


@pytest.mark.parametrize("text", ODD_FILES.values(), ids=ODD_FILES.keys())
def test_an_odd_notebook_file_is_unreadable_not_an_exception(tmp_path, text):
    path = tmp_path / "n.ipynb"
    path.write_text(text)
    with pytest.raises(UnreadableNotebook, match="not a readable notebook"):
        code_cells(path)
    kernel = StandInKernel(path, ["a"])
    assert Watcher(kernel).reload() is False  # nothing ran; the last good cells stay served
    assert len(kernel.ran) == 1 and kernel.ran[0].startswith("app.log('warning'")
