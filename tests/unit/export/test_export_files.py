"""`mcp-notebook export` on macOS and Windows: names, paths, shells and consoles.

A package (and distribution) name must be ASCII for `pip install .` to build it, whatever
the notebook's name, the same on every platform (macOS stores "é" decomposed), and short
enough for Windows' MAX_PATH; the README's commands work in Windows' shells; the summary
and a failure reach a console that is not UTF-8.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import nbformat
import pytest
from packaging.utils import canonicalize_name

from mcp_notebook import __version__
from mcp_notebook.commandline import split_windows
from mcp_notebook.export.package import (
    ExportFailed,
    export_notebook,
    package_name,
    runtime_range,
)
from tests.sources import ADD_BARE

NAMES = ["Données 2024.ipynb", "数据分析.ipynb", "Überblick (Kopie).py", "CON.ipynb"]


@pytest.mark.parametrize("name", NAMES)
def test_a_package_name_is_an_ascii_identifier_and_a_valid_distribution_name(name):
    package = package_name(Path(name))
    assert package.isascii() and package.isidentifier()
    # What hatchling checks for pyproject's name (PEP 508): raises InvalidName otherwise.
    canonicalize_name(package.replace("_", "-"), validate=True)


@pytest.mark.parametrize("name", NAMES)
def test_the_name_does_not_depend_on_the_unicode_normalization(name):
    decomposed = unicodedata.normalize("NFD", name)  # as macOS reports it
    assert package_name(Path(decomposed)) == package_name(Path(name))


def test_accents_are_dropped_and_a_name_with_no_ascii_left_is_notebook():
    assert package_name(Path("Données 2024.ipynb")) == "donnees_2024_mcp"
    assert package_name(Path("数据分析.ipynb")) == "notebook_mcp"


def test_a_non_ascii_package_name_given_is_refused(tmp_path):
    notebook = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), notebook)
    with pytest.raises(ValueError, match="not a Python package name"):
        export_notebook(notebook, tmp_path / "out", package="données_mcp", check=False)


def test_the_readmes_install_commands_work_in_windows_shells(tmp_path):
    # cmd.exe passes single quotes on to the program: pip would get "'.[test]'" and fail.
    notebook = tmp_path / "calc.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("@mcp.tool\ndef add(a: int) -> int:\n    return a")]
    nbformat.write(nb, notebook)
    result = export_notebook(notebook, tmp_path / "out", check=False)
    readme = (result.directory / "README.md").read_text(encoding="utf-8")
    installs = re.findall(r"pip install [^`&;\n#]+", readme)
    assert len(installs) >= 4
    for command in installs:
        words = split_windows(command)
        # The package (with extras), and the runtime's wheel that the export carries.
        wheels = [w for w in words[2:] if w.startswith("wheels/")]
        assert words[:2] == ["pip", "install"] and all(
            re.fullmatch(r"\.(\[\w+\])?", word) for word in words[2:] if word not in wheels
        ), command
        assert all((result.directory / w).is_file() for w in wheels), command
    assert '$env:MCP_NOTEBOOK_TOKEN = "secret"' in readme  # PowerShell's way to set it


def test_a_long_notebook_name_gives_paths_that_fit_windows_max_path(tmp_path):
    # A file name may have 255 characters; the package is a folder named after it, holding
    # files, next to tests/test_PACKAGE.py. Windows refuses paths past 260 characters.
    notebook = tmp_path / f"{'quarterly revenue forecast ' * 9}final.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), notebook)
    result = export_notebook(notebook, tmp_path / "out", check=False)
    assert len(result.package) <= 50 and result.package.startswith("quarterly_revenue")
    written = [p.relative_to(result.directory) for p in result.directory.rglob("*")]
    assert written and max(len(str(p)) for p in written) < 80


def test_the_export_command_prints_non_ascii_paths_on_an_ascii_console(tmp_path):
    # A Windows console in cp1252 cannot show every name, PYTHONIOENCODING=ascii none.
    notebook = tmp_path / "zoë" / "分析.ipynb"
    notebook.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(), notebook)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUTF8"}
    env["PYTHONIOENCODING"] = "ascii"
    out = tmp_path / "zoë" / "分析-server"
    done = subprocess.run(
        [sys.executable, "-m", "mcp_notebook", "export", str(notebook), "-o", str(out)],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    shown = done.stdout.decode("ascii")
    assert shown.startswith("exported notebook_mcp to ")
    assert shown.splitlines()[0].encode().decode("unicode_escape").endswith(str(out))


def test_a_failing_export_is_reported_whatever_the_consoles_encodings(tmp_path):
    # Windows: the parent decodes the probe's output in the locale's code page while the
    # child writes what PYTHONIOENCODING says (utf-8, as `config` advises): simulated with
    # an ASCII locale and no UTF-8 mode. The traceback quotes the failing line.
    notebook = tmp_path / "n.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('raise ValueError("données 分析 invalides")')]
    nbformat.write(nb, notebook)
    env = {**os.environ, "LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0"}
    env.update(PYTHONCOERCECLOCALE="0", PYTHONIOENCODING="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mcp_notebook", "export", str(notebook), "-o", str(tmp_path / "o")],
        capture_output=True,
        env=env,
        timeout=120,
    )
    said = done.stderr.decode("utf-8")
    assert done.returncode == 1, said
    assert "does not import" in said and "ValueError" in said, said
    assert "UnicodeDecodeError" not in said


def _later(version: str, part: int) -> str:
    numbers = [int(n) for n in version.split(".")[:3]]
    numbers[part] += 1
    numbers[part + 1 :] = [0] * (2 - part)
    return ".".join(map(str, numbers))


def _earlier_minor(version: str) -> str:
    major, minor = (int(n) for n in version.split(".")[:2])
    return f"{major - 1}.99.0" if minor == 0 else f"{major}.{minor - 1}.9"


@pytest.mark.parametrize(
    ("installed", "accepted"),
    [
        (__version__, True),
        (_later(__version__, 2), True),  # a fix release of the runtime
        (_later(__version__, 1), False),  # the next minor series may change the API
        (_later(__version__, 0), False),
        (_earlier_minor(__version__), False),  # older than the exporter
    ],
)
def test_the_package_refuses_a_runtime_outside_its_range(tmp_path, installed, accepted):
    notebook = tmp_path / "calc.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("@mcp.tool\ndef add(a: int) -> int:\n    return a")]
    nbformat.write(nb, notebook)
    export_notebook(notebook, tmp_path / "out", check=False)
    runtime = tmp_path / "runtime" / "mcp_notebook"  # what a runtime of that version holds
    runtime.mkdir(parents=True)
    (runtime / "__init__.py").write_text("")
    (runtime / "_version.py").write_text(f'__version__ = "{installed}"\n')
    # -S and cwd: neither site-packages nor the checkout, where the real package is.
    done = subprocess.run(
        [sys.executable, "-S", "-c", "import calc_mcp"],
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(runtime.parent), str(tmp_path / "out")]),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    low, high = runtime_range()
    refusal = f"calc_mcp needs mcp-notebook-runtime >={low},<{high}, but {installed} is installed"
    assert (done.returncode == 0) == accepted, done.stderr
    assert (refusal in done.stderr) == (not accepted), done.stderr


def test_the_notebooks_own_mcp_import_is_left_out_and_its_objects_are_refused(tmp_path):
    """``from mcp_notebook import mcp`` (the docs' equal of ``%load_ext``) was kept: the
    export's ``mcp`` became the kernel's NotebookMCP, its check passed where mcp-notebook
    is installed, and the installed export (the runtime alone) failed to import."""
    notebook = tmp_path / "own.ipynb"
    write_cells(
        notebook,
        "from mcp_notebook import mcp",
        ADD_BARE,
    )
    result = export_notebook(notebook, tmp_path / "out")
    code = (result.directory / result.package / "notebook.py").read_text(encoding="utf-8")
    assert "from mcp_notebook import mcp" not in code

    other = tmp_path / "other.ipynb"
    write_cells(other, "from mcp_notebook import NotebookMCP\nmine = NotebookMCP()")
    with pytest.raises(ExportFailed, match=r"mcp_notebook\.app\b.*does not have"):
        export_notebook(other, tmp_path / "other-out")


def write_cells(path: Path, *sources: str) -> None:
    document = nbformat.v4.new_notebook()
    document.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(document, str(path))


def test_an_app_view_makes_the_check_fail_saying_why(tmp_path):
    """An app view needs mcp-notebook's apps/, which the runtime an export installs does
    not carry: the check passed where mcp-notebook was installed, the package did not."""
    notebook = tmp_path / "view.ipynb"
    write_cells(notebook, "mcp.app('board', '<p>board</p>')")
    with pytest.raises(ExportFailed, match="app views"):
        export_notebook(notebook, tmp_path / "out")
