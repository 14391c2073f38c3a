"""`mcp-notebook serve --confirm`: who approves a confirm=True tool when nobody is at a notebook.

Headless, the only one who could be asked is the calling client, whose own "accept" would
run the tool: that protects a person using an honest client, not against a misbehaving
agent. So serve denies such calls unless told otherwise (``--confirm elicit`` asks the
client's user, ``--confirm allow`` runs them unasked), and says which on stderr. Over HTTP
and over stdio, with a client that would accept every question.
"""

from __future__ import annotations

import subprocess

import pytest
from mcp.client import Client

from tests.conftest import Served, connect
from tests.sdk_scenarios import Yes, attempt
from tests.serving import SERVE, ServeProcess
from tests.sources import GUARDED
from tests.sources import notebook as write_notebook
from tests.stdio import module_params


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    path = tmp_path_factory.mktemp("confirm") / "guarded.ipynb"
    write_notebook(path, GUARDED)
    return path


@pytest.fixture
def serve(notebook):
    started: list[ServeProcess] = []

    def run(*options: str) -> tuple[Served, ServeProcess]:
        process = ServeProcess(str(notebook), "--port", "0", "--token", "t0ken", *options)
        started.append(process)
        return Served(kernel=None, url=process.wait_for_url(), token="t0ken"), process

    yield run
    for process in started:
        process.stop()


async def test_by_default_serve_denies_even_a_client_that_would_accept(serve):
    served, process = serve()
    yes = Yes()
    async with connect(served, "legacy", elicitation_callback=yes) as client:
        result, done = await attempt(client)
    assert result.is_error and done == "nothing"
    assert yes.asked == []  # the client was not the one to decide
    text = result.content[0].text
    assert "no notebook front end is attached" in text and "--confirm elicit" in text
    assert "Confirmations: deny" in "".join(process.stderr)


async def test_confirm_elicit_asks_the_client_whose_accept_runs_the_tool(serve):
    served, process = serve("--confirm", "elicit")
    yes = Yes()
    async with connect(served, "legacy", elicitation_callback=yes) as client:
        result, done = await attempt(client)
    assert not result.is_error and done == "orders"
    assert len(yes.asked) == 1 and "delete_rows" in yes.asked[0]
    banner = "".join(process.stderr)
    assert "Confirmations: elicit" in banner and "not against a misbehaving agent" in banner


async def test_confirm_allow_runs_it_without_asking(serve):
    served, process = serve("--confirm", "allow")
    yes = Yes()
    async with connect(served, "legacy", elicitation_callback=yes) as client:
        result, done = await attempt(client)
    assert not result.is_error and done == "orders" and yes.asked == []
    assert "Confirmations: allow" in "".join(process.stderr)


async def test_over_stdio_serve_denies_by_default_too(notebook):
    yes = Yes()
    parameters = module_params("serve", str(notebook), "--transport", "stdio")
    async with Client(parameters, mode="legacy", elicitation_callback=yes) as client:
        result, done = await attempt(client)
    assert result.is_error and done == "nothing" and yes.asked == []


def test_an_unknown_confirm_word_is_a_usage_error(notebook):
    done = subprocess.run(
        [*SERVE, str(notebook), "--confirm", "maybe"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "invalid choice: 'maybe'" in done.stderr
