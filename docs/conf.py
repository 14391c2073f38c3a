"""Sphinx configuration of the mcp-notebook documentation site (MyST Markdown pages).

Build it strictly, as tests/e2e/docs/test_site.py does:
``python -m sphinx -W --keep-going -b html docs docs/_build/html``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The package documented is the one in this checkout, not whatever else is installed.
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE / "_ext"))

from mcp_notebook import __version__  # noqa: E402

project = "mcp-notebook"
author = "the mcp-notebook authors"
copyright = "the mcp-notebook authors, MIT licence"
release = __version__
version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "mcp_reference",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# MyST: `[text](page.md#a-heading)` links are checked (a broken one is a warning, so an
# error in the strict build); ```{directive} fences for Sphinx's directives.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence", "deflist"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options: dict[str, object] = {}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = f"mcp-notebook {__version__}"
html_static_path: list[str] = []
