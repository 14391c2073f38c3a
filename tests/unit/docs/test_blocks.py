"""The README and the docs: every code block is checked or says why not; the README stays short
and keeps its two commands; user pages carry no development history."""

from __future__ import annotations

import json
import re

import pytest

from tests.docs.blocks import DOCS, MARK, ROOT, Block, all_blocks, blocks, pages

README_MAX_LINES = 200
# The README's promise: these two commands, as written, do the whole set-up.
SERVE_COMMAND = 'pip install ".[dataframes]" && mcp-notebook serve'
TEST_COMMAND = 'pip install -e ".[test]" && python -m pytest'
# Pages for contributors, where the project's own history may be named.
CONTRIBUTOR_PAGES = {DOCS / "architecture.md", DOCS / "benchmarks.md"}
CONTRIBUTOR_FOLDERS = {DOCS / "contributing"}
HISTORY = re.compile(
    r"\b(issues? \d+|stops? \d+|issues? #\d+|sessions? \d+)\b"
    r"|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b",  # a commit hash
    re.IGNORECASE,
)


def test_every_code_block_is_run_by_a_test_or_says_why_not():
    unchecked = [block.where for block in all_blocks() if block.runs is None and not block.mark]
    assert not unchecked, (
        "these code blocks are neither run by tests/docs nor marked with a line "
        f"'*Not run: the reason.*' right above them: {unchecked}"
    )


def test_a_marked_block_gives_a_reason_the_reader_sees():
    for block in all_blocks():
        if block.mark is not None:
            assert len(block.mark) >= 8, (block.where, block.mark)


def test_the_block_collector_sees_fences_markers_and_directives(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nx = 1\n```\n\n*Not run: needs Claude Code installed.*\n\n"
        "```bash\nclaude mcp add x\n```\n\n```{toctree}\nintro\n```\n\n"
        "```bash\nmcp-notebook --help\nrm -rf /\n```\n\n````text\n```\n````\n",
        encoding="utf-8",
    )
    found = [(b.language, b.runs, b.mark) for b in blocks(page)]
    assert found == [
        ("python", "kernel", None),
        ("bash", None, "needs Claude Code installed."),
        ("bash", None, None),  # one unsafe command: not run, and not marked either
        ("text", None, None),
    ]
    assert MARK.match("*Not run: a diagram, not code.*")


def test_json_blocks_parse():
    for block in all_blocks():
        if block.runs == "json":
            json.loads(block.code)


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_the_readme_keeps_its_two_commands_and_ci_runs_the_second():
    readme = blocks(ROOT / "README.md")
    shells = [block.code.strip() for block in readme if block.language == "bash"]
    assert SERVE_COMMAND in shells
    assert TEST_COMMAND in shells
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.rstrip().splitlines()[-1] == TEST_COMMAND


def test_the_readme_snippet_puts_no_comment_after_a_magic():
    # IPython hands a line magic everything after it: `%mcp start  # note` is a UsageError.
    for block in all_blocks():
        if block.language in ("python", "ipython"):
            for line in block.code.splitlines():
                if line.lstrip().startswith("%"):
                    assert "#" not in line, (block.where, line)


def _user_pages() -> list:
    found = []
    for page in pages():
        if page in CONTRIBUTOR_PAGES or any(f in page.parents for f in CONTRIBUTOR_FOLDERS):
            continue
        found.append(page)
    return found


@pytest.mark.parametrize("page", _user_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_user_pages_carry_no_development_history(page):
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        found = HISTORY.search(line)
        assert found is None, f"{page.relative_to(ROOT)}:{number}: {found.group(0)!r} in {line!r}"


def test_every_docs_page_is_collected():
    assert DOCS / "index.md" in pages()
    assert all(isinstance(block, Block) for block in all_blocks())


CHANGELOG = ROOT / "CHANGELOG.md"
KINDS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_the_changelog_is_for_users_in_keep_a_changelog_form():
    from mcp_notebook import __version__

    text = CHANGELOG.read_text(encoding="utf-8")
    releases = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, re.MULTILINE)
    assert releases[0] == ("Unreleased", "")
    assert releases[1][0] == __version__ and releases[1][1], releases[1]
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'\nversion = "{__version__}"\n' in pyproject
    for kind in re.findall(r"^### (.+)$", text, re.MULTILINE):
        assert kind in KINDS, kind
    for number, line in enumerate(text.splitlines(), 1):
        found = HISTORY.search(line) or re.search(r"\bmcp_notebook/|\w+\.py\b", line)
        assert found is None, f"CHANGELOG.md:{number}: {found.group(0)!r}"


def test_the_readme_s_images_are_there_and_small():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", readme)
    assert images, "the README shows the notebook side"
    for image in images:
        path = ROOT / image
        assert path.suffix == ".png" and path.is_file(), image
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", image
        assert path.stat().st_size < 200_000, (image, path.stat().st_size)
