"""Fixtures shared by the kernel tier's modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kernel.frontend import Frontend


@pytest.fixture(scope="module")
def frontend(kernel) -> Iterator[Frontend]:
    """A second front end on the module's kernel. Request it before anything is displayed
    (the ``served`` fixtures do): it learns only the widgets opened after it connected."""
    front = Frontend(kernel)
    yield front
    front.close()


@pytest.fixture(scope="module")
def calls_feed(kernel, frontend) -> str:
    """The MCP panel's feed on the module's kernel, opened as the JupyterLab extension
    opens it: ``frontend.wait_for_call(calls_feed, tool, "behind")`` waits until the
    server shows a call queued behind a running cell, which nothing else can tell while
    the cell holds the kernel."""
    kernel.run("%load_ext mcp_notebook")
    return frontend.watch_calls()
