"""A generated bearer token can be pasted after ``--token``: none begins with "-"."""

from __future__ import annotations

import secrets

import pytest

from mcp_notebook import cli
from mcp_notebook.app import NotebookMCP
from mcp_notebook.export import runtime
from mcp_notebook.transports.security import new_token


@pytest.fixture
def dashed_first(monkeypatch) -> None:
    """``token_urlsafe`` gives two tokens argparse would read as options, then a plain one."""
    given = iter(["-Bq3", "--x9", "plain-Token_1"])
    monkeypatch.setattr(secrets, "token_urlsafe", lambda n=None: next(given))


def test_a_new_token_skips_the_ones_that_begin_with_a_dash(dashed_first):
    token = new_token()
    assert token == "plain-Token_1"
    args = cli._parser().parse_args(["bridge", "--url", "http://127.0.0.1:1/mcp", "--token", token])
    assert args.token == token


def test_random_tokens_are_long_and_never_dashed():
    tokens = {new_token() for _ in range(2000)}  # ~31 of 2000 would begin with "-"
    assert len(tokens) == 2000
    assert not any(t.startswith("-") for t in tokens)
    assert min(map(len, tokens)) == 32


def test_the_notebook_server_makes_such_a_token(dashed_first, runtime_dir):
    app = NotebookMCP()
    app.start(port=0)
    try:
        assert app.token == "plain-Token_1"
    finally:
        app.stop()


def test_an_export_without_a_token_set_makes_such_a_token(dashed_first):
    assert runtime._token(True, None) == "plain-Token_1"
