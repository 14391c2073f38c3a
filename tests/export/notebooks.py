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


# A skill folder beside the notebook (a nested skill, a file that is not text) and one
# from an absolute path elsewhere, as a notebook's cells would register them.
SALES_MD = "---\nname: sales\ndescription: Read the sales.\n---\n\nSee references/guide.md.\n"
FORECAST_MD = "---\nname: forecast\ndescription: Forecast a quarter.\n---\n\nExtrapolate.\n"
GLOSSARY_MD = "---\nname: glossary\ndescription: The team's words.\n---\n\nRevenue.\n"
LOGO = bytes(range(256))  # not UTF-8: served as a blob


def skill_folder_notebook(notebook_dir: Path, elsewhere: Path) -> Path:
    """``notebook_dir/folders.ipynb``, registering the folders it writes (its last cell)."""
    sales = notebook_dir / "skills" / "sales"
    for relative, data in {
        "SKILL.md": SALES_MD.encode(),
        "references/guide.md": b"# Guide\n\nBy region.\n",
        "assets/logo.png": LOGO,
        "forecast/SKILL.md": FORECAST_MD.encode(),
        "forecast/model.py": b"def forecast():\n    return 1\n",
    }.items():
        (sales / relative).parent.mkdir(parents=True, exist_ok=True)
        (sales / relative).write_bytes(data)
    glossary = (elsewhere / "shared" / "glossary").resolve()
    glossary.mkdir(parents=True)
    (glossary / "SKILL.md").write_text(GLOSSARY_MD, encoding="utf-8")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext mcp_notebook"),
        nbformat.v4.new_code_cell(
            f'mcp.skill(path="skills/sales")\nmcp.skill("team/glossary", path={str(glossary)!r})'
        ),
    ]
    path = notebook_dir / "folders.ipynb"
    nbformat.write(notebook, path)
    return path
