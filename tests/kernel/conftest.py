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
