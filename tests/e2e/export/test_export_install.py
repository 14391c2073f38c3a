"""Exports installed into a fresh virtualenv (no IPython in it), served over stdio and over
HTTP by uvicorn, and driven by the official SDK client in both modes."""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import shutil
import subprocess
import venv
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp_notebook import __version__
from mcp_notebook.export.package import export_notebook, runtime_range
from mcp_notebook.export.wheel import build_wheel, wheel_name
from tests import portable
from tests.conftest import MODES
from tests.export.notebooks import GLOSSARY_MD, LOGO, helper_notebook, skill_folder_notebook

CHECKOUT = Path(__file__).resolve().parents[3]
NOTEBOOKS = CHECKOUT / "notebooks"
TOKEN = "export-test-token"
# What an export must not install: the notebook side of mcp-notebook (and mcp-notebook).
NOTEBOOK_SIDE = (
    "ipython",
    "ipykernel",
    "ipywidgets",
    "jupyter-client",
    "jupyter-core",
    "nbformat",
    "tornado",
    "mcp-notebook",
)


def _readme_commands(directory: Path) -> list[str]:
    """The README's `pip install` lines, as written (indented code)."""
    lines = (directory / "README.md").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.startswith("    pip install ")]


def _run_as_typed(venv_dir: Path, command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` in ``cwd`` as in a shell where ``venv_dir`` is activated (its ``pip``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv_dir)
    return subprocess.run(
        shlex.split(command), cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


def installed(python: Path) -> dict[str, str]:
    """The distributions of ``python``'s environment (normalised names) and versions."""
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {re.sub(r"[-_.]+", "-", p["name"]).lower(): p["version"] for p in json.loads(listed)}


def _exported(root: Path) -> dict[str, Path]:
    packages = {}
    for notebook in (NOTEBOOKS / "quickstart.ipynb", NOTEBOOKS / "dataframes.ipynb"):
        result = export_notebook(notebook, root / notebook.stem)
        packages[result.package] = result.directory
    helpers = export_notebook(helper_notebook(root), root / "helpers")
    packages[helpers.package] = helpers.directory
    folders = export_notebook(skill_folder_notebook(root / "project", root / "shared"), root / "f")
    packages[folders.package] = folders.directory
    shutil.rmtree(root / "project" / "skills")  # the package's copies are all that remain
    shutil.rmtree(root / "shared")
    return packages


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Iterator[dict[str, Path]]:
    """A fresh virtualenv (nothing installed), and three exports installed each with its
    README's commands, run in its folder: the install, then the asgi extra's."""
    root = tmp_path_factory.mktemp("export-venv")
    venv.create(root / "venv", with_pip=True)
    python = root / "venv" / "bin" / "python"
    packages = _exported(root)
    for directory in packages.values():
        commands = _readme_commands(directory)
        first, asgi = commands[0], next(c for c in commands if '".[asgi]"' in c)
        assert first.endswith(" .")  # the package itself, and nothing else but its runtime
        for command in (first, asgi):
            done = _run_as_typed(root / "venv", command, directory)
            assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
    yield {"python": python, "venv": root / "venv", **packages}


def test_the_readme_command_installs_no_jupyter_package(fresh):
    names = set(installed(fresh["python"]))
    assert {"mcp-notebook-runtime", "quickstart-mcp", "helpers-mcp", "uvicorn"} <= names
    assert sorted(names & set(NOTEBOOK_SIDE)) == []
    # The runtime is the wheel the export carries, named by file: not one from an index.
    code = "from importlib.metadata import distribution as d; "
    code += "print(d('mcp-notebook-runtime').read_text('direct_url.json'))"
    origin = subprocess.run([fresh["python"], "-c", code], capture_output=True, text=True)
    url = json.loads(origin.stdout)["url"]
    assert url == (fresh["quickstart_mcp"] / "wheels" / wheel_name(__version__)).as_uri()
    code = "import importlib.util as u; print(u.find_spec('IPython'), u.find_spec('tornado'))"
    found = subprocess.run([fresh["python"], "-c", code], capture_output=True, text=True)
    assert found.stdout.split() == ["None", "None"]


def _stdio(fresh, package: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return StdioServerParameters(command=str(fresh["python"]), args=["-m", package], env=env)


class Uvicorn:
    """``uvicorn PACKAGE.asgi:app`` on a free loopback port, from the fresh virtualenv."""

    def __init__(self, fresh, package: str) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["MCP_NOTEBOOK_TOKEN"] = TOKEN
        self.process = subprocess.Popen(
            [str(fresh["python"]), "-m", "uvicorn", f"{package}.asgi:app", "--port", "0"],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd="/",
        )
        assert self.process.stderr is not None
        for line in self.process.stderr:  # waits for its start-up line, not for a time
            found = re.search(r"running on http://127\.0\.0\.1:(\d+)", line)
            if found:
                self.url = f"http://127.0.0.1:{found.group(1)}/mcp"
                return
        raise AssertionError(f"uvicorn did not start (exit {self.process.wait()})")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


@pytest.fixture
def uvicorn_server(request, fresh) -> Iterator[Uvicorn]:
    server = Uvicorn(fresh, request.param)
    try:
        yield server
    finally:
        server.stop()


def _http(url: str):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    return http, streamable_http_client(url, http_client=http)


async def _quickstart_session(client: Client) -> None:
    assert [t.name for t in (await client.list_tools()).tools] == ["add"]
    assert (await client.call_tool("add", {"a": 2, "b": 40})).content[0].text == "42"
    sales = (await client.read_resource("df://sales")).contents[0].text
    assert sales.splitlines()[:2] == ["region,units,price", "north,120,9.5"]
    prompt = await client.get_prompt("summarize", {"topic": "sales"})
    assert prompt.messages[0].content.text == "Summarize sales in 3 bullet points."


@MODES
async def test_the_quickstart_export_serves_over_stdio(fresh, mode):
    async with Client(_stdio(fresh, "quickstart_mcp"), mode=mode) as client:
        assert client.server_info.name == "quickstart"
        await _quickstart_session(client)


@MODES
@pytest.mark.parametrize("uvicorn_server", ["quickstart_mcp"], indirect=True)
async def test_the_quickstart_export_serves_over_uvicorn(uvicorn_server, mode):
    http, transport = _http(uvicorn_server.url)
    async with http, Client(transport, mode=mode) as client:
        await _quickstart_session(client)


@pytest.mark.parametrize("ask", [portable.interrupt, portable.stop], ids=["ctrl-c", "stop"])
async def test_python_m_package_serves_http_and_stops_cleanly_on_request(fresh, ask):
    """``python -m PACKAGE --transport http``: serve's stop path (Ctrl-C, SIGTERM, and on
    Windows Ctrl+Break, which :mod:`tests.portable` sends there), not a killed process."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["MCP_NOTEBOOK_TOKEN"] = TOKEN
    process = subprocess.Popen(
        [str(fresh["python"]), "-m", "quickstart_mcp", "--transport", "http", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd="/",
        **portable.spawn_options(),
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:  # its start-up line, not a time
            found = re.search(r"serving quickstart at (http://\S+)", line)
            if found:
                break
        else:
            raise AssertionError(f"the package did not start (exit {process.wait()})")
        http, transport = _http(found.group(1))
        async with http, Client(transport, mode="legacy") as client:
            await _quickstart_session(client)
        # uvicorn serves the ASGI app's checks: no token, or another site's Host, no entry.
        async with httpx2.AsyncClient(timeout=60) as anonymous:
            body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            assert (await anonymous.post(found.group(1), json=body)).status_code == 401
            rebound = {"Authorization": f"Bearer {TOKEN}", "Host": "attacker.example"}
            assert (
                await anonymous.post(found.group(1), json=body, headers=rebound)
            ).status_code == 403
        ask(process)
        rest = process.stderr.read()  # to the end: the process closed its stderr
        assert process.wait(60) == 0, rest
        assert "stopped serving quickstart" in rest
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@MODES
@pytest.mark.parametrize("uvicorn_server", ["dataframes_mcp"], indirect=True)
async def test_the_dataframes_export_serves_frames_images_and_live_variables(uvicorn_server, mode):
    http, transport = _http(uvicorn_server.url)
    async with http, Client(transport, mode=mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"top_regions", "plot_units", "add_orders", "price_stats"} <= names
        top = await client.call_tool("top_regions", {"n": 2})
        assert not top.is_error and top.structured_content is not None
        chart = await client.call_tool("plot_units", {"region": "north"})
        assert chart.content[0].type == "image" and chart.content[0].mime_type == "image/png"
        schema = (await client.read_resource("df://orders/schema")).contents[0].text
        assert "order_id" in schema
        # mcp.resource(var="orders") reads the module's variable, which a tool re-binds.
        added = await client.call_tool(
            "add_orders", {"rows": [{"region": "north", "units": 1, "price": 1.0}]}
        )
        count = int(added.content[0].text)
        assert count > 100_000
        page = await client.read_resource(f"df://orders?offset={count - 1}&limit=1")
        assert f"{count - 1}," in page.contents[0].text


@MODES
async def test_the_helper_export_runs_helpers_imports_and_asks_the_client_to_confirm(fresh, mode):
    async with Client(_stdio(fresh, "helpers_mcp"), mode=mode) as client:
        stats = await client.call_tool("word_stats", {"text": "a bb a"})
        assert stats.structured_content == {"words": 3, "distinct": 2, "mean_length": 4 / 3}
        note = await client.read_resource("notes://monday")
        assert note.contents[0].text == '{"day": "monday", "notes": []}'
        prompt = await client.get_prompt("explain", {"term": "MCP"})
        assert prompt.messages[0].content.text == "Explain MCP simply."
        # confirm=True: nobody is at a notebook, and the export denies it by default.
        denied = await client.call_tool("forget", {"topic": "x"})
        assert denied.is_error


@MODES
async def test_the_skill_folder_export_serves_its_copies_from_anywhere(fresh, mode):
    """Installed, run from another folder, with the notebook's skill folders gone."""
    server = _stdio(fresh, "folders_mcp").model_copy(update={"cwd": fresh["venv"]})
    async with Client(server, mode=mode) as client:
        logo = (await client.read_resource("skill://sales/assets/logo.png")).contents[0]
        assert base64.b64decode(getattr(logo, "blob", "")) == LOGO
        glossary = (await client.read_resource("skill://team/glossary/SKILL.md")).contents[0]
        assert getattr(glossary, "text", None) == GLOSSARY_MD


def test_the_exports_own_tests_pass_in_the_fresh_venv(fresh):
    python = fresh["python"]
    subprocess.run([str(python), "-m", "pip", "install", "-q", "pytest"], check=True, timeout=900)
    for package in ("quickstart_mcp", "helpers_mcp"):
        done = subprocess.run(
            [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
            cwd=fresh[package],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_a_runtime_of_another_minor_version_is_refused(tmp_path):
    """pip refuses the README's command with a 0.(Y+1) runtime; forced in all the same,
    the package refuses to import, saying which runtime it needs."""
    low, high = runtime_range()
    major, minor = (int(part) for part in high.split("."))
    other = f"{major}.{minor}.0"
    directory = export_notebook(NOTEBOOKS / "quickstart.ipynb", tmp_path / "quickstart").directory
    built = build_wheel(CHECKOUT, tmp_path / "other", version=other)
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    command = _readme_commands(directory)[0].replace(f"wheels/{wheel_name(low)}", str(built))
    refused = _run_as_typed(tmp_path / "venv", command, directory)
    assert refused.returncode != 0
    assert "mcp-notebook-runtime" in refused.stdout + refused.stderr
    forced = f"pip install --no-deps {built} ."
    done = _run_as_typed(tmp_path / "venv", forced, directory)
    assert done.returncode == 0, done.stdout + done.stderr
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [str(python), "-m", "quickstart_mcp"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=120,
    )
    assert run.returncode != 0 and run.stdout == ""
    assert (
        f"quickstart_mcp needs mcp-notebook-runtime >={low},<{high}, but {other} is installed"
        in run.stderr
    )
