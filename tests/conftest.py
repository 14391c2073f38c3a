from __future__ import annotations

import asyncio
import os
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.kernels import Kernel

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


# The SDK's own client waits 30 s to connect and write, 5 min for a response to start:
# a call that waits for a person (a confirmation in a browser test) sends nothing before.
SDK_TIMEOUT = httpx2.Timeout(30, read=300)


@asynccontextmanager
async def connect(served: Served, mode: str = "auto", **client_options) -> AsyncIterator[Client]:
    """The official SDK client, connected to the notebook's endpoint with its token."""
    async with (
        httpx2.AsyncClient(headers=served.headers, timeout=SDK_TIMEOUT) as http,
        Client(
            streamable_http_client(served.url, http_client=http), mode=mode, **client_options
        ) as client,
    ):
        yield client


@pytest.fixture
def runtime_dir(tmp_path, monkeypatch) -> Path:
    """A discovery folder of this test's own (a kernel or serve it starts inherits it)."""
    from mcp_notebook import discovery

    monkeypatch.setenv("MCP_NOTEBOOK_RUNTIME_DIR", str(tmp_path / "runtime"))
    return discovery.folder()


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
# Every test gets exactly one of four markers, from the folder it lives in (the first folder
# under tests/), so that `python -m pytest -m unit` is the fast run for daily work and plain
# `python -m pytest` (what CI runs) still runs everything, the static checks once:
#   tests/unit/    in-process: the package, fakes, loopback sockets and threads of this
#                  process; its folders mirror the package (tests/unit/protocol/ ...);
#   tests/static/  mypy, import-linter and ruff over the whole tree;
#   tests/kernel/  a real ipykernel (jupyter_client), with or without a bridge subprocess;
#   tests/e2e/     a whole program: `mcp-notebook serve`, Node (conformance), JupyterLab
#                  and chromium, Jupyter Server and JupyterHub, fresh virtualenvs, Ray.
# Everything else under tests/ is a helper and holds no test. A unit test that starts a
# kernel or one of those programs fails and says where it belongs.
TIERS = ("e2e", "kernel", "static", "unit")
TESTS = Path(__file__).resolve().parent


def tier_of_path(path: Path) -> str | None:
    """The tier of a test module or folder at ``path``: its first folder under tests/."""
    try:
        first = path.resolve().relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return None
    return first if first in TIERS else None


def tier_of(item: pytest.Item) -> str:
    tier = tier_of_path(Path(item.path))
    if tier is None:
        raise pytest.UsageError(
            f"{item.nodeid}: a test lives in the folder of its tier: "
            + ", ".join(f"tests/{tier}/" for tier in TIERS)
        )
    return tier


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


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``-m unit`` (or another tier alone) does not import the other tiers' modules: what
    they need (Ray, Playwright, JupyterHub, JupyterLab) is not in the ``test-unit`` extra,
    and importing it is slow."""
    wanted = config.getoption("markexpr", "")
    if wanted not in TIERS:
        return None
    tier = tier_of_path(collection_path)
    return True if tier is not None and tier != wanted else None


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
                f"a unit test started {program}: move it to tests/kernel/ (a kernel) or "
                "tests/e2e/ (a whole program)",
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


@pytest.fixture(scope="module")
def authorization_server() -> Iterator[Any]:
    """A real OAuth authorization server on a free loopback port, for one module's tests."""
    from tests.oauth.authorization_server import AuthorizationServer  # joserfc: only here

    server = AuthorizationServer().start()
    try:
        yield server
    finally:
        server.stop()
