"""An exported package's confirm=True tools: denied unless it is told to ask or allow.

Nobody is at a notebook: the only one who could be asked is the calling client, whose own
"accept" would run the tool. ``python -m PACKAGE --confirm deny|elicit|allow`` (default
deny, or ``$MCP_NOTEBOOK_CONFIRM``) chooses, over stdio as over HTTP, and the ASGI app
reads ``$MCP_NOTEBOOK_CONFIRM``. The package runs in a subprocess, as a client starts it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from mcp_notebook.export.package import export_notebook
from mcp_notebook.export.runtime import asgi_app, exported_app
from tests.sdk_scenarios import Yes, attempt
from tests.sources import GUARDED
from tests.sources import notebook as write_notebook


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export-confirm")
    notebook = folder / "guarded.ipynb"
    write_notebook(notebook, GUARDED)
    return export_notebook(notebook, folder / "out", check=False)


def environment(exported, **extra: str) -> dict[str, str]:
    """This checkout, then the package's folder (as an installed package would be found)."""
    path = os.pathsep.join(p for p in (str(exported.directory), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def package(exported, *args: str, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", exported.package, *args],
        env=environment(exported, **env),
        cwd=str(exported.directory),
    )


async def test_by_default_the_export_denies_a_client_that_would_accept(exported):
    yes = Yes()
    async with Client(package(exported), mode="legacy", elicitation_callback=yes) as client:
        result, done = await attempt(client)
    assert result.is_error and done == "nothing" and yes.asked == []
    assert "MCP_NOTEBOOK_CONFIRM=elicit" in result.content[0].text


@pytest.mark.parametrize(
    "args, env, asked",
    [(("--confirm", "elicit"), {}, 1), ((), {"MCP_NOTEBOOK_CONFIRM": "allow"}, 0)],
)
async def test_the_export_asks_or_allows_when_told(exported, args, env, asked):
    yes = Yes()
    parameters = package(exported, *args, **env)
    async with Client(parameters, mode="legacy", elicitation_callback=yes) as client:
        result, done = await attempt(client)
    assert not result.is_error and done == "orders" and len(yes.asked) == asked


def test_the_export_says_at_start_up_what_a_confirmation_does(exported):
    def started(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", exported.package, *args],
            input="",  # stdin closed at once: it starts, says so, and ends
            capture_output=True,
            text=True,
            timeout=120,
            cwd=exported.directory,
            env=environment(exported, **env),
        )

    assert "Confirmations: deny" in started().stderr
    assert "Confirmations: elicit" in started(MCP_NOTEBOOK_CONFIRM="elicit").stderr
    refused = started(MCP_NOTEBOOK_CONFIRM="sometimes")
    assert refused.returncode == 2 and "MCP_NOTEBOOK_CONFIRM" in refused.stderr


def test_the_asgi_app_denies_unless_its_environment_says_otherwise():
    app = exported_app("asgi-confirm", {})
    asgi_app(app, environ={"MCP_NOTEBOOK_TOKEN": "t"})
    assert app.confirm_headless == "deny"
    asgi_app(app, environ={"MCP_NOTEBOOK_TOKEN": "t", "MCP_NOTEBOOK_CONFIRM": "elicit"})
    assert app.confirm_headless == "elicit"
    with pytest.raises(ValueError, match="deny, elicit, allow"):
        asgi_app(app, environ={"MCP_NOTEBOOK_TOKEN": "t", "MCP_NOTEBOOK_CONFIRM": "yes"})
