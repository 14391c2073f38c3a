"""The runtime distribution's module list is closed under imports: an exported server never
imports a module of the package that its runtime wheel lacks (kernel, UI, tornado, bridge)."""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path

import pytest

from mcp_notebook.export import runtime_modules as rt
from mcp_notebook.export import wheel

ROOT = Path(__file__).resolve().parents[3]
# Where an exported package starts: python -m PACKAGE, PACKAGE.asgi:app, PACKAGE.ray:app.
ENTRY_POINTS = (
    "mcp_notebook.export.runtime",
    "mcp_notebook.export.stdio",
    "mcp_notebook.export.http",
    "mcp_notebook.export.ray_serve",
    "mcp_notebook.transports.asgi",
)
# Never in the runtime (the import contracts say so too).
OUTSIDE = ("mcp_notebook.app", "mcp_notebook.kernel", "mcp_notebook.ui", "mcp_notebook.apps")
JUPYTER = ("IPython", "ipykernel", "ipywidgets", "jupyter_client", "nbformat", "tornado")


@pytest.fixture(scope="module")
def graph():
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (Python 3.11+)")
    built = grimp.build_graph("mcp_notebook", include_external_packages=True)
    for importer, imported in rt.LAZY_OUTSIDE:
        built.remove_import(importer=importer, imported=imported)
    return built


def test_every_module_an_export_reaches_is_in_the_runtime(graph):
    runtime = set(rt.module_names(ROOT))
    reached = set(ENTRY_POINTS)
    for entry in ENTRY_POINTS:
        reached |= graph.find_upstream_modules(entry)
    ours = {m for m in reached if m == "mcp_notebook" or m.startswith("mcp_notebook.")}
    assert sorted(ours - runtime) == []
    assert not [m for m in ours if m.startswith(OUTSIDE)]
    assert not {m.split(".")[0] for m in reached} & set(JUPYTER)


def test_the_runtime_imports_only_its_own_modules(graph):
    """Closed: no module of the list imports one of the package outside it."""
    runtime = set(rt.module_names(ROOT))
    leaks = sorted(
        (module, imported)
        for module in runtime
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.startswith("mcp_notebook.") and imported not in runtime
    )
    assert leaks == []


@pytest.mark.parametrize(("importer", "imported"), sorted(rt.LAZY_OUTSIDE))
def test_the_imports_excepted_run_only_inside_functions(importer, imported):
    package = ROOT.joinpath(*importer.split("."), "__init__.py")
    path = package if package.is_file() else ROOT.joinpath(*importer.split(".")).with_suffix(".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top_level = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom | ast.Import) and _module_level(tree, node)
    ]
    target = imported.rsplit(".", 1)[-1]
    assert not [n for n in top_level if target in ast.dump(n)], f"{importer} imports {imported}"


def _module_level(tree: ast.Module, node: ast.AST) -> bool:
    """Run on import: neither in a function nor under ``if TYPE_CHECKING:``."""
    deferred = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        or (isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    ]
    return not any(node in ast.walk(block) for block in deferred)


def test_the_runtime_wheel_holds_exactly_the_list_and_builds_byte_identical(tmp_path):
    first = wheel.build_wheel(ROOT, tmp_path / "a")
    second = wheel.build_wheel(ROOT, tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as archive:
        names = archive.namelist()
        info = f"mcp_notebook_runtime-{wheel.source_version(ROOT)}.dist-info"
        requires = [
            line.split(": ", 1)[1]
            for line in archive.read(f"{info}/METADATA").decode().splitlines()
            if line.startswith("Requires-Dist: ")
        ]
    assert [n for n in names if not n.startswith(info)] == rt.files(ROOT)
    assert {f"{info}/METADATA", f"{info}/WHEEL", f"{info}/RECORD"} <= set(names)
    assert "mcp_notebook/export/runtime.py" in names
    assert not [n for n in names if n.startswith(("mcp_notebook/kernel/", "mcp_notebook/ui/"))]
    assert "mcp_notebook/transports/http.py" not in names and "mcp_notebook/app.py" not in names
    assert requires == list(rt.REQUIRES)


def test_the_kernel_free_contract_covers_the_runtime():
    """pyproject.toml's runtime-kernel-free contract names every module of the list (a
    package names all of its own), but the package __init__s checked above."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [
        c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "runtime-kernel-free"
    ]
    sources = contract["source_modules"]
    inits = {"mcp_notebook", "mcp_notebook.export", "mcp_notebook.transports"}
    uncovered = [
        module
        for module in rt.module_names(ROOT)
        if module not in inits
        and not any(module == s or module.startswith(s + ".") for s in sources)
    ]
    assert uncovered == []
