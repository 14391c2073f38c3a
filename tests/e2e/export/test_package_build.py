"""The packages as shipped: wheel and sdist built by `python -m build`, installed into a
fresh virtualenv and smoke-tested. mcp-notebook: the bundled quickstart served, one call;
mcp-notebook-runtime (runtime/): built twice byte-identical, installed from its sdist with
no Jupyter package, a server on it answering the official SDK client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from mcp_notebook import __version__
from mcp_notebook.export import wheel as runtime_wheel
from tests.e2e.export.test_export_install import installed as installed_in
from tests.sources import ADD_BARE

CHECKOUT = Path(__file__).resolve().parents[3]


async def test_the_wheel_and_sdist_build_install_and_serve(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(CHECKOUT)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    (wheel,) = dist.glob("mcp_notebook-*.whl")
    (sdist,) = dist.glob("mcp_notebook-*.tar.gz")
    # Reproducible: a second build gives the same bytes (hatchling's fixed timestamps).
    again = _build(CHECKOUT, tmp_path / "again")
    assert (wheel.read_bytes(), sdist.read_bytes()) == (
        again[0].read_bytes(),
        again[1].read_bytes(),
    )
    assert __version__ in wheel.name and __version__ in sdist.name
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert f"mcp_notebook-{__version__}.dist-info/licenses/LICENSE" in names
    assert "mcp_notebook/_data/quickstart.ipynb" in names
    assert "mcp_notebook/export/runtime.py" in names and "mcp_notebook/py.typed" in names
    assert not any(name.startswith("tests/") for name in names)
    # The JupyterLab extension ("Insert as cell"), as shared data JupyterLab finds.
    lab = f"mcp_notebook-{__version__}.data/data/share/jupyter/labextensions/mcp-notebook/"
    built = json.loads((CHECKOUT / "labextension" / "package.json").read_text())
    assert {
        lab + "package.json",
        lab + "install.json",
        lab + built["jupyterlab"]["_build"]["load"],
    } <= set(names)
    with tarfile.open(sdist) as archive:
        members = {Path(m).relative_to(Path(m).parts[0]).as_posix() for m in archive.getnames()}
    assert {"LICENSE", "pyproject.toml", "README.md", "mcp_notebook/__init__.py"} <= members
    assert {"labextension/package.json", "js/labextension/src/index.ts"} <= members
    # The runtime's project too: both distributions build from mcp-notebook's sdist.
    assert {"runtime/pyproject.toml", "runtime/_backend.py"} <= members
    metadata = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); "
            f"print(z.read('mcp_notebook-{__version__}.dist-info/METADATA').decode())",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "License-Expression: MIT" in metadata

    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    # The quickstart serves a DataFrame: the dataframes extra (a bare install's default
    # `serve` stops at its `import pandas`).
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"{wheel}[dataframes]"],
        check=True,
        timeout=900,
    )
    installed = tmp_path / "venv" / "share" / "jupyter" / "labextensions" / "mcp-notebook"
    assert json.loads((installed / "package.json").read_text()) == built
    # As in an activated virtualenv: the kernel spec's "python" is the venv's.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    # No notebook argument: the quickstart shipped inside the wheel; run away from the
    # checkout so that its notebooks/ folder is not found instead.
    server = StdioServerParameters(
        command=str(tmp_path / "venv" / "bin" / "mcp-notebook"),
        args=["serve", "--transport", "stdio"],
        env=env,
        cwd=str(tmp_path),
    )
    async with Client(server, mode="auto") as client:
        assert client.server_info.name == "quickstart"
        assert (await client.call_tool("add", {"a": 20, "b": 22})).content[0].text == "42"


# Never installed by the runtime.
NOTEBOOK_SIDE = {"ipython", "ipykernel", "ipywidgets", "jupyter-client", "nbformat", "tornado"}
TINY_SERVER = (
    """
from mcp_notebook.export.runtime import exported_app, main

mcp = exported_app("tiny", globals())


"""
    + ADD_BARE
    + """

main(mcp)
"""
)


def _build(source: Path, outdir: Path) -> tuple[Path, Path]:
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(outdir), str(source)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    (wheel,) = outdir.glob("*.whl")
    (sdist,) = outdir.glob("*.tar.gz")
    return wheel, sdist


async def test_the_runtime_builds_reproducibly_installs_without_jupyter_and_serves(tmp_path):
    wheel, sdist = _build(CHECKOUT / "runtime", tmp_path / "a")
    again = _build(CHECKOUT / "runtime", tmp_path / "b")
    assert (wheel.read_bytes(), sdist.read_bytes()) == (
        again[0].read_bytes(),
        again[1].read_bytes(),
    )
    assert wheel.name == f"mcp_notebook_runtime-{__version__}-py3-none-any.whl"
    assert sdist.name == f"mcp_notebook_runtime-{__version__}.tar.gz"
    # The wheel an export carries is this one (made from the same files).
    carried = runtime_wheel.build_wheel(CHECKOUT, tmp_path / "export")
    assert carried.read_bytes() == wheel.read_bytes()

    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    # From the sdist: its own build backend makes the wheel again, outside the checkout.
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(sdist)], check=True, timeout=900)
    installed = installed_in(python)
    assert installed["mcp-notebook-runtime"] == __version__
    assert sorted(NOTEBOOK_SIDE & set(installed)) == [] and "mcp-notebook" not in installed
    script = tmp_path / "tiny.py"
    script.write_text(TINY_SERVER)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    server = StdioServerParameters(
        command=str(python), args=[str(script)], env=env, cwd=str(tmp_path)
    )
    for mode in ("auto", "legacy"):
        async with Client(server, mode=mode) as client:
            assert client.server_info.name == "tiny"
            assert (await client.call_tool("add", {"a": 20, "b": 22})).content[0].text == "42"
