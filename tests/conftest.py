from __future__ import annotations

import asyncio
import os
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from .kernels import Kernel

# Kernels, discovery files and subprocesses of this run stay out of the user's runtime dir.
os.environ["JUPYTER_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="mcp-notebook-tests-")


@dataclass
class Served:
    kernel: Kernel
    url: str
    token: str | None

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    """A real ipykernel for the tests of one module."""
    k = Kernel()
    try:
        yield k
    finally:
        k.shutdown()


def start_server(kernel: Kernel, setup: str, start: str = "%mcp start --port 0") -> Served:
    kernel.run("%load_ext mcp_notebook")
    kernel.run(setup)
    kernel.run(start)
    return Served(kernel, kernel.eval("mcp.url"), kernel.eval("mcp.token"))


@asynccontextmanager
async def connect(served: Served, mode: str = "auto", **client_options) -> AsyncIterator[Client]:
    """The official SDK client, connected to the notebook's endpoint with its token."""
    async with (
        httpx2.AsyncClient(headers=served.headers, timeout=30) as http,
        Client(
            streamable_http_client(served.url, http_client=http), mode=mode, **client_options
        ) as client,
    ):
        yield client


MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])


@pytest.fixture(scope="module")
def kernel_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A loop on a thread of its own, standing in for a kernel's main thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="kernel-main", daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


# --- Test tiers -------------------------------------------------------------------------
# Every test gets exactly one of four markers, assigned here and nowhere else, so that
# `python -m pytest -m unit` is the fast run for daily work and plain `python -m pytest`
# (what CI runs) still runs everything, the static checks once:
#   unit    in-process: the package, fakes, loopback sockets and threads of this process;
#   static  mypy, import-linter and ruff over the whole tree (tests/static/);
#   kernel  a real ipykernel (jupyter_client), with or without a bridge subprocess;
#   e2e     a whole program: `mcp-notebook serve`, Node (conformance), JupyterLab+chromium.
# A folder or module below decides first, then the fixtures a test uses, then the test's
# own node id (for modules that mix tiers); everything else is unit. A unit test that
# starts a kernel or one of those programs fails and says where to classify it.
TIERS = ("e2e", "kernel", "static", "unit")
TIER_OF_PATH = {
    "tests/browser/": "e2e",
    "tests/conformance/": "e2e",
    "tests/jupyter/": "e2e",
    "tests/test_serve.py": "e2e",
    "tests/test_stdio_serve.py": "e2e",
    "tests/test_stdio_start.py": "e2e",
    "tests/test_lone_surrogates_stdio.py": "e2e",
    "tests/test_serve_watch.py": "e2e",
    "tests/test_stdio_tasks.py": "e2e",
    "tests/test_serve_dispatcher.py": "e2e",
    "tests/test_export_install.py": "e2e",
    "tests/test_export_ray.py": "e2e",
    "tests/oauth/test_sdk_flow.py": "e2e",
    "tests/oauth/test_sdk_flow_ray.py": "e2e",
    "tests/test_replays.py": "e2e",
    "tests/test_package_build.py": "e2e",
    "tests/test_serve_debugger.py": "e2e",
    "tests/test_serve_confirm.py": "e2e",
    "tests/test_agent_clis.py": "e2e",
    "tests/test_skills_inspector.py": "e2e",
    "tests/fuzz/test_stdio_content_length.py": "e2e",
    "tests/fuzz/test_stdio_ndjson.py": "e2e",
    "tests/docs/test_site.py": "e2e",
    "tests/docs/test_run_blocks.py": "kernel",
    "tests/kernel/": "kernel",
    "tests/stress/": "kernel",
    "tests/static/": "static",
    "tests/fuzz/test_bridge.py": "kernel",
    "tests/oauth/test_kernel_start.py": "kernel",
    "tests/oauth/test_serve_oauth.py": "e2e",
}
TIER_OF_FIXTURE = {"kernel": "kernel", "served": "kernel"}
SERVE_PLATFORMS = "tests/test_serve_platforms.py::test_"
TIER_OF_TEST = {
    SERVE_PLATFORMS + name: "e2e"
    for name in (
        "ctrl_break_on_windows_stops_serve_and_its_kernel",
        "a_closed_console_on_windows_stops_serve_and_its_kernel",
        "sigterm_stops_serve_its_kernel_and_its_discovery_file",
        "stdin_closed_by_a_gui_client_stops_serve_its_kernel_and_its_discovery_file",
        "serve_raises_its_kernels_low_open_file_limit",
    )
}
# What a unit test must not start: these programs, a kernel, or `mcp-notebook serve` (the
# bridge against an in-process fake notebook is quick and stays unit).
NOT_UNIT_PROGRAMS = {"node", "npx", "chromium", "jupyter", "jupyter-lab"}
NOT_UNIT_MODULES = {"ipykernel", "ipykernel_launcher", "jupyterlab", "jupyter_server"}


def not_unit(argv: list[str]) -> str | None:
    """The program ``argv`` starts, if a unit test must not start it."""
    program = os.path.basename(argv[0]) if argv else ""
    if program in NOT_UNIT_PROGRAMS:
        return program
    if len(argv) > 2 and argv[1] == "-m" and argv[2] in NOT_UNIT_MODULES:
        return argv[2]
    if len(argv) > 3 and argv[1:3] == ["-m", "mcp_notebook"] and argv[3] == "serve":
        return "mcp-notebook serve"
    return None


def tier_of(item: pytest.Item) -> str:
    path = item.nodeid.split("::", 1)[0]
    for prefix, tier in TIER_OF_PATH.items():
        if path.startswith(prefix):
            return tier
    for fixture, tier in TIER_OF_FIXTURE.items():
        if fixture in getattr(item, "fixturenames", ()):
            return tier
    return TIER_OF_TEST.get(item.nodeid.split("[", 1)[0], "unit")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``-m unit`` does not import the other tiers' modules: what they need (Ray, Playwright,
    JupyterHub, JupyterLab) is not in the ``test-unit`` extra, and importing it is slow."""
    if config.getoption("markexpr", "") != "unit":
        return None
    try:
        path = collection_path.relative_to(config.rootpath).as_posix()
    except ValueError:
        return None
    path += "/" if collection_path.is_dir() else ""
    for prefix, tier in TIER_OF_PATH.items():
        if path.startswith(prefix) and tier != "unit":
            return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(tier_of(item))


@pytest.fixture(autouse=True)
def unit_tests_start_no_kernel_or_program(request, monkeypatch) -> None:
    """A test in the unit tier that starts a kernel, serve, Node or chromium fails here."""
    if request.node.get_closest_marker("unit") is None:
        return
    import subprocess

    execute_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def guarded(self, args, *rest, **options):
        argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
        program = not_unit([os.fsdecode(arg) for arg in argv])
        if program is not None:
            pytest.fail(
                f"a unit test started {program}: classify it in tests/conftest.py "
                "(TIER_OF_PATH, TIER_OF_FIXTURE or TIER_OF_TEST)",
                pytrace=False,
            )
        return execute_child(self, args, *rest, **options)

    monkeypatch.setattr(subprocess.Popen, "_execute_child", guarded)


@pytest.fixture
def afterwards() -> Iterator[Callable[[Kernel, str], None]]:
    """``afterwards(kernel, cell)``: run ``cell`` when the test ends, passed or failed.

    A test that redefines or removes a tool, prompt or variable of a module-scoped kernel
    registers the cell that puts it back *before* changing it, so one failure cannot
    cascade into the next tests of the module.
    """
    cells: list[tuple[Kernel, str]] = []
    yield lambda kernel, cell: cells.append((kernel, cell))
    for kernel, cell in reversed(cells):
        kernel.run(cell)
