"""Write an exported notebook as an installable package, and check that it imports.

``DIR/pyproject.toml`` (the notebook's imports pinned to the versions installed here, and
the runtime distribution in the range this version serves), ``DIR/wheels/`` (the runtime's
wheel, built from this installation's files: wheel.py, while no index has it),
``DIR/README.md`` (how to install and serve it, and what was not exported), ``DIR/PACKAGE/``
with ``__init__.py`` (refuses a runtime outside the range), ``notebook.py`` (the code,
extract.py), ``__main__.py`` (``python -m PACKAGE``),
``asgi.py`` (``PACKAGE.asgi:app``), ``ray.py`` (``PACKAGE.ray:app``, replicas on Ray Serve,
ray_serve.py), the skills' sources (``notebook.ipynb``: the markdown cells; ``skill_folders/``:
the folders of ``mcp.skill(path=...)``, skill_folders.py), and ``DIR/tests/`` (what it
registers, served).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import unicodedata
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from .._version import __version__
from ..errors import McpNotebookError
from ..notebookfile import code_cells
from ..protocol.versions import FIRST_MODERN, LATEST_HANDSHAKE
from ..registry.skills import SkillError
from . import runtime_modules, skill_folders, wheel
from .extract import Extracted, Problem, extract

# Runs in a fresh interpreter: does the exported code import, and what does it register?
_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from {package}.notebook import mcp
r = mcp.registry
print(json.dumps({{"tools": sorted(r.tools), "resources": sorted(r.resources),
    "templates": sorted(r.templates), "prompts": sorted(r.prompts),
    "skill_folders": mcp.skill_folders_read,
    "front_ends": sorted(m for m in ("IPython", "ipykernel", "ipywidgets") if m in sys.modules),
    "outside": sorted(m for m in sys.modules if m.split(".")[0] == "mcp_notebook"
                      and m not in {runtime}),
    }}))
"""


MAX_NAME = 40  # characters of the notebook's name kept in the package's
WHEELS = "wheels"  # the export's folder of wheels no index has (the runtime's)
# Installs the export from its folder: the runtime's wheel named as a file (so that no
# package of the same name on an index can stand in for it), the rest from the index.
INSTALL = f"pip install {WHEELS}/{wheel.wheel_name(__version__)}"

# The export's __init__.py: refuses, at import, a runtime outside the range it was made for.
_INIT = '''"""{name}, exported from {notebook} by mcp-notebook {version}."""

import re as _re

from mcp_notebook._version import __version__ as _runtime

RUNTIME = ">={low},<{high}"  # the mcp-notebook-runtime versions this package runs on


def _parts(version):
    return tuple(int(part) for part in _re.findall(r"\\d+", version)[:3])


if not _parts("{low}") <= _parts(_runtime) < _parts("{high}"):
    raise ImportError(
        f"{package} needs mcp-notebook-runtime {{RUNTIME}}, but {{_runtime}} is installed: "
        "reinstall it from its folder with `{install} .`"
    )
'''


class ExportFailed(McpNotebookError, RuntimeError):
    """The exported code does not import: the package was written, but cannot serve."""


@dataclass
class Export:
    directory: Path
    package: str
    extracted: Extracted
    dependencies: list[str]
    registered: dict[str, list[str]] = field(default_factory=dict)

    @property
    def problems(self) -> list[Problem]:
        return self.extracted.problems

    def summary(self) -> str:
        lines = [f"exported {self.package} to {self.directory}"]
        lines += [
            f"  {kind}: {', '.join(names)}" for kind, names in self.registered.items() if names
        ]
        if self.extracted.display_only:
            cells = ", ".join(map(str, self.extracted.display_only))
            lines.append(f"  cells left out (display or magics only): {cells}")
        if self.problems:
            lines.append("  not exported as in the notebook:")
            lines += [f"    {problem}" for problem in self.problems]
        return "\n".join(lines)


def package_name(notebook: Path) -> str:
    """``my notebook.ipynb`` -> ``my_notebook_mcp``: an importable name unlike its imports'.

    ASCII only: a distribution's name (pyproject's ``name``) must be, and ``Données`` is
    stored decomposed on macOS (``e`` + a combining accent), which would split the name
    there. Accents are dropped (``donnees_mcp``); a name with no ASCII letter left is
    ``notebook_mcp``; a long one is cut to :data:`MAX_NAME` characters."""
    ascii_stem = unicodedata.normalize("NFKD", notebook.stem).encode("ascii", "ignore").decode()
    # Cut short: the name is a folder and a test file's name, and Windows paths stop at
    # 260 characters (MAX_PATH) unless long paths were enabled.
    stem = re.sub(r"\W+", "_", ascii_stem).lower()[:MAX_NAME].strip("_") or "notebook"
    if stem[0].isdigit():
        stem = f"nb_{stem}"
    return f"{stem}_mcp"


def export_notebook(
    notebook: Path, directory: Path, *, package: str | None = None, check: bool = True
) -> Export:
    """Write ``notebook`` as a package into ``directory``; ``check`` imports it (a fresh
    interpreter runs the exported code once) and raises :class:`ExportFailed` if it fails."""
    notebook = Path(notebook)
    package = package or package_name(notebook)
    if not (package.isidentifier() and package.isascii()):
        raise ValueError(f"not a Python package name (ASCII letters, digits, _): {package!r}")
    extracted = extract((cell.number, cell.source) for cell in code_cells(notebook))
    dependencies, unknown = pins(extracted.imports)
    for name in unknown:
        extracted.problems.append(
            Problem(0, f"import {name}: no installed distribution provides it", "left out")
        )
    result = Export(Path(directory), package, extracted, dependencies)
    _write(result, notebook)
    if check:
        result.registered = _probe(result, notebook)
    return result


def pins(imports: set[str]) -> tuple[list[str], list[str]]:
    """``name==version`` of the distributions providing ``imports``; imports none provides."""
    provided = metadata.packages_distributions()
    found: dict[str, str] = {}
    unknown = []
    for module in sorted(imports - {"mcp_notebook"}):  # the runtime: runtime_range
        distributions = provided.get(module) or _provided_by_files(module)
        if not distributions:
            unknown.append(module)
            continue
        for distribution in distributions:
            found[_canonical(distribution)] = metadata.version(distribution)
    return [f"{name}=={version}" for name, version in sorted(found.items())], unknown


def runtime_range(version: str = __version__) -> tuple[str, str]:
    """The runtime versions an export made by ``version`` runs on: that release or a later
    one of the same minor series (``0.2.0`` -> ``0.2.0`` up to ``0.3``). Not ``==``: a fix
    release of the runtime installs under an old export; not the next minor: before 1.0 a
    minor release may change what exported code calls."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return version, f"{major}.{minor + 1}"


def _provided_by_files(module: str) -> list[str]:
    """The distributions whose files hold ``module``: Python 3.10's packages_distributions
    reads only top_level.txt, which wheels built without setuptools (pandas) lack."""
    wanted = {f"{module}/__init__.py", f"{module}.py"}
    found = []
    for distribution in metadata.distributions():
        files = distribution.files or []
        if any(str(path) in wanted for path in files):
            found.append(distribution.metadata["Name"])
    return found


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _probe(result: Export, notebook: Path) -> dict[str, list[str]]:
    """Run the exported code once, in the notebook's folder as its kernel does (relative
    paths lead where they did there), then copy in the skill folders it read."""
    package = result.directory.resolve()
    # The runtime's modules, as a set literal: all that an installed export may import.
    runtime = repr(set(runtime_modules.module_names(Path(__file__).resolve().parents[2])))
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _PROBE.format(package=result.package, runtime=runtime),
            str(package),
        ],
        capture_output=True,
        cwd=notebook.resolve().parent,
        # One encoding both sides: the locale's (a Windows code page) need not be the one
        # the child writes in (PYTHONIOENCODING, UTF-8 mode), and a traceback quotes code.
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        encoding="utf-8",
        errors="replace",
        timeout=600,
    )
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-8:])
        raise ExportFailed(f"the exported code of {result.package} does not import:\n{tail}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if found.pop("front_ends"):
        raise ExportFailed(f"the exported code of {result.package} imports IPython")
    outside = found.pop("outside")
    if outside:  # here they exist; where only the runtime is installed, the import fails
        why = (
            "app views (app=, mcp.app) are drawn by mcp-notebook's apps/, which an export "
            "cannot carry yet"
            if any(m.startswith("mcp_notebook.apps") for m in outside)
            else "use the `mcp` the export defines, not mcp-notebook's own objects"
        )
        raise ExportFailed(
            f"the exported code of {result.package} imports {', '.join(outside[:5])}, "
            f"which {runtime_modules.DISTRIBUTION} (all an export installs) does not "
            f"have: {why}"
        )
    try:
        skill_folders.copy_folders(found.pop("skill_folders"), package / result.package)
    except (OSError, SkillError) as error:  # changed since the probe read it, unreadable
        raise ExportFailed(f"{result.package}: a skill folder cannot be copied: {error}") from None
    return {kind: list(names) for kind, names in found.items()}


def _write(result: Export, notebook: Path) -> None:
    root, package = result.directory, result.package
    code_dir = root / package
    code_dir.mkdir(parents=True, exist_ok=True)
    (root / "tests").mkdir(exist_ok=True)
    for old in (root / WHEELS).glob(f"{wheel.wheel_name('*')}"):  # an earlier export's
        old.unlink()
    # Built from the files this package runs from: the runtime is exactly this version's.
    wheel.build_wheel(Path(__file__).resolve().parents[2], root / WHEELS)
    low, high = runtime_range()
    files = {
        code_dir / "__init__.py": _INIT.format(
            name=notebook.stem,
            notebook=notebook.name,
            version=__version__,
            low=low,
            high=high,
            package=package,
            install=INSTALL,
        ),
        code_dir / "notebook.py": _module(result, notebook),
        code_dir / "__main__.py": (
            f'"""python -m {package}: serve over stdio (default) or --transport http."""\n\n'
            "import sys\n\nfrom mcp_notebook.export.runtime import main\n\n"
            "from .notebook import mcp\n\nsys.exit(main(mcp))\n"
        ),
        code_dir / "asgi.py": (
            f'"""The ASGI app: uvicorn {package}.asgi:app (MCP_NOTEBOOK_TOKEN is the token)."""\n\n'
            "from mcp_notebook.export.runtime import asgi_app\n\n"
            "from .notebook import mcp\n\napp = asgi_app(mcp)\n"
        ),
        code_dir / "ray.py": (
            f'"""Replicas on Ray Serve: serve run {package}.ray:app.\n\n'
            'pip install ".[ray]"; $MCP_NOTEBOOK_REPLICAS replicas (default 2), each running '
            f"{package}.notebook once at start.\n"
            '"""\n\n'
            "from mcp_notebook.export.ray_serve import build\n\n"
            f"app = build({package + '.notebook'!r})\n"
        ),
        root / "pyproject.toml": _pyproject(result),
        root / "README.md": _readme(result, notebook),
        root / "tests" / f"test_{package}.py": _tests(result),
    }
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    skill_folders.clear(code_dir)  # the probe copies them anew
    if "mcp.skill(" in result.extracted.code and notebook.suffix == ".ipynb":
        _write_skill_cells(notebook, code_dir / SKILL_CELLS)


# An export has no notebook file of its own: ``mcp.skill(from_cells=...)`` reads this one,
# the notebook's markdown cells (and their tags) only: no code, no outputs.
SKILL_CELLS = "notebook.ipynb"


def _write_skill_cells(notebook: Path, target: Path) -> None:
    import nbformat

    source = nbformat.read(str(notebook), as_version=4)  # type: ignore[no-untyped-call]
    kept = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]
    kept.cells = [
        nbformat.v4.new_markdown_cell(  # type: ignore[no-untyped-call]
            cell.source, metadata={"tags": cell.metadata["tags"]} if "tags" in cell.metadata else {}
        )
        for cell in source.cells
        if cell.cell_type == "markdown"
    ]
    nbformat.write(kept, str(target))  # type: ignore[no-untyped-call]


def _module(result: Export, notebook: Path) -> str:
    return (
        f'"""The code cells of {notebook.name}, as mcp-notebook {__version__} exported them.\n\n'
        "Magics and display-only statements are removed (see the README).\n"
        '"""\n\n'
        "from mcp_notebook.export.runtime import exported_app\n\n"
        f"mcp = exported_app({notebook.stem!r}, globals())\n\n\n"
        f"{result.extracted.code}\n"
    )


def _pyproject(result: Export) -> str:
    low, high = runtime_range()
    runtime = f"{runtime_modules.DISTRIBUTION}>={low},<{high}"
    dependencies = "".join(f'    "{d}",\n' for d in [runtime, *result.dependencies])
    try:
        uvicorn = f"uvicorn=={metadata.version('uvicorn')}"
    except metadata.PackageNotFoundError:
        uvicorn = "uvicorn"
    try:
        ray = f"ray[serve]=={metadata.version('ray')}"
    except metadata.PackageNotFoundError:
        ray = "ray[serve]"
    return (
        '[build-system]\nrequires = ["hatchling>=1.25"]\nbuild-backend = "hatchling.build"\n\n'
        f'[project]\nname = "{result.package.replace("_", "-")}"\nversion = "0.1.0"\n'
        f'description = "MCP server exported from a notebook by mcp-notebook"\n'
        f'readme = "README.md"\nrequires-python = ">={sys.version_info[0]}.{sys.version_info[1]}"\n'
        f"dependencies = [\n{dependencies}]\n\n"
        f'[project.optional-dependencies]\nasgi = ["{uvicorn}"]\nray = ["{ray}"]\n'
        'test = ["pytest"]\n\n'
        f'[tool.hatch.build.targets.wheel]\npackages = ["{result.package}"]\n'
    )


def _readme(result: Export, notebook: Path) -> str:
    p = result.package
    problems = "\n".join(f"- {problem}" for problem in result.problems) or "- nothing"
    shown = ", ".join(map(str, result.extracted.display_only)) or "none"
    low, high = runtime_range()
    return f"""# {p}

The MCP server of `{notebook.name}`, exported by mcp-notebook {__version__}: its code cells
run once when the package is imported, and what they register is served without a Jupyter
kernel or IPython.

In this folder (POSIX shells and Windows PowerShell alike), install it (the runtime from
`{WHEELS}/`, the notebook's imports, pinned, from the package index) and serve over stdio
(what a desktop client spawns). Install it in an environment of its own, not one that has
mcp-notebook: the runtime is made of mcp-notebook's own files, which the two would share.

    {INSTALL} .
    python -m {p}

Over HTTP (Streamable HTTP, served by uvicorn: the `asgi` extra; a bearer token is printed):

    {INSTALL} ".[asgi]"
    python -m {p} --transport http --port 8765
    MCP_NOTEBOOK_TOKEN=secret uvicorn {p}.asgi:app
    {INSTALL} ".[ray]" && MCP_NOTEBOOK_TOKEN=secret MCP_NOTEBOOK_REPLICAS=4 serve run {p}.ray:app

On Windows (PowerShell), set the variables first:

    $env:MCP_NOTEBOOK_TOKEN = "secret"; uvicorn {p}.asgi:app

The package runs on `{runtime_modules.DISTRIBUTION}` {low} up to (not including) {high}: the
kernel-free part of mcp-notebook (registry, protocol, stdio and ASGI transports), with no
Jupyter package. Its wheel is in `{WHEELS}/`, because no package index has it yet; once
it is published there, a plain `pip install .` finds it and `{WHEELS}/` may be deleted.
The commands name the wheel's file rather than `--find-links {WHEELS}`: a package of the
same name on an index could otherwise be installed in its place.
Importing the package with a runtime outside that range fails with a message saying so.

Both protocol eras are served (handshake-era sessions and {FIRST_MODERN} stateless requests).
The ASGI app refuses Host headers other than loopback unless `MCP_NOTEBOOK_HOST` /
`MCP_NOTEBOOK_ALLOWED_HOSTS` name them, and browser Origins other than loopback unless
`MCP_NOTEBOOK_ALLOWED_ORIGINS` does; without `MCP_NOTEBOOK_TOKEN` it makes a token and
logs it (`MCP_NOTEBOOK_NO_AUTH=1`: none, on loopback only).

Tools marked `confirm=True` are denied: nobody is at a notebook to approve them.
`--confirm elicit` (or `MCP_NOTEBOOK_CONFIRM=elicit`; the ASGI app reads only the variable)
asks the client's user instead, and the client's own answer runs them: that protects a
person using an honest client, not against a misbehaving one. `--confirm allow` runs them
unasked.

## What was exported

Cells {", ".join(map(str, result.extracted.exported))}, in `{p}/notebook.py` (left out, for
holding only display statements or magics: {shown}). Not exported as in the notebook:

{problems}

Tests: `{INSTALL} ".[test]"`, then `python -m pytest tests`.
"""


def _tests(result: Export) -> str:
    p = result.package
    return f'''"""{p} registers what the notebook did, and serves it."""

import asyncio

from mcp_notebook.export.runtime import server_of
from mcp_notebook.protocol import Session

from {p}.notebook import mcp

EXPECTED = {json.dumps(result.registered, indent=4) if result.registered else "None"}


def test_registers_what_the_notebook_registered():
    r = mcp.registry
    found = {{"tools": sorted(r.tools), "resources": sorted(r.resources),
        "templates": sorted(r.templates), "prompts": sorted(r.prompts)}}
    assert EXPECTED is None or found == EXPECTED


def test_lists_its_tools_over_mcp():
    server = server_of(mcp, inline=True)
    session = Session()
    init = {{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {{
        "protocolVersion": "{LATEST_HANDSHAKE}", "capabilities": {{}},
        "clientInfo": {{"name": "test", "version": "1"}}}}}}
    listing = {{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}}

    async def run():
        await server.handle(init, session)
        return await server.handle(listing, session)

    reply = asyncio.run(run())
    assert sorted(t["name"] for t in reply["result"]["tools"]) == sorted(mcp.registry.tools)
'''
