"""A notebook with helper functions, module imports and cells that cannot be exported."""

from __future__ import annotations

from pathlib import Path

import nbformat

CELLS = [
    "%load_ext mcp_notebook",
    "import json\nimport statistics\nfrom collections import Counter",
    # helpers used by the tools, and a tool that asks before it runs
    '''def _words(text: str) -> list[str]:
    return text.lower().split()


@mcp.tool
def word_stats(text: str) -> dict:
    """Words, distinct words and the mean word length."""
    words = _words(text)
    return {"words": len(words), "distinct": len(Counter(words)),
            "mean_length": statistics.mean(len(w) for w in words)}


@mcp.tool(confirm=True)
def forget(topic: str) -> str:
    """Forget a topic (asks first)."""
    return f"forgot {topic}"''',
    '''@mcp.resource_template("notes://{day}")
def notes(day: str) -> str:
    return json.dumps({"day": day, "notes": []})


@mcp.prompt
def explain(term: str) -> str:
    """Explain a term."""
    return f"Explain {term} simply."''',
    "%%bash\necho this needs a shell",
    "namespace = get_ipython().user_ns",
    "word_stats\nprint('display only')\ndisplay(word_stats)",
    "%mcp start",
]


def helper_notebook(folder: Path) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    path = folder / "helpers.ipynb"
    nbformat.write(notebook, path)
    return path
