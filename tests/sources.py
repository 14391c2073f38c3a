"""The notebook sources the tests share: the cells that register the usual tools, and a
writer of ``.ipynb`` files made of code cells.

A test whose meaning depends on an unusual body (a tool that records its runs, naps until
a file appears, or answers differently after a redefinition) keeps its own source; the
names here say what a test may rely on: a tool's name, its parameters, its description.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

LOAD = "%load_ext mcp_notebook"

# add(a, b=1), "Add two numbers.": its schema requires only ``a``.
ADD = '''@mcp.tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b
'''
# add(a, b), "Add two integers.": both required.
ADD_INTS = '''@mcp.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''
# add(a, b) without a description.
ADD_BARE = """@mcp.tool
def add(a: int, b: int) -> int:
    return a + b
"""
# add(a, b=1) without a description (what a cell re-running ADD without its docstring
# registers again: a change clients are told of).
ADD_ONE_BARE = """@mcp.tool
def add(a: int, b: int = 1) -> int:
    return a + b
"""

# A notebook whose delete_rows asks first (confirm=True); deleted() says what it did.
GUARDED = """\
%load_ext mcp_notebook

ran = []

@mcp.tool(confirm=True)
def delete_rows(table: str) -> str:
    ran.append(table)
    return f"deleted rows from {table}"

@mcp.tool
def deleted() -> str:
    return ",".join(ran) or "nothing"
"""


def notebook(path: Path, *cells: str, kernel: bool = False) -> Path:
    """Write ``path``, a notebook of these code cells (``kernel``: with the python3
    kernelspec a front end needs to open it); ``path``."""
    written = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    if kernel:
        written.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
        }
    nbformat.write(written, path)
    return path
