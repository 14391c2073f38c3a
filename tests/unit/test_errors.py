"""One exception base class: ``except mcp_notebook.McpNotebookError`` catches all of ours."""

import importlib
import inspect
import pkgutil

import pytest

import mcp_notebook
from mcp_notebook import McpNotebookError
from mcp_notebook.discovery import NotFound
from mcp_notebook.exposure import UnsafeBind
from mcp_notebook.registry import ArgumentError
from mcp_notebook.wire.jsontext import JsonTextError

# What optional extras bring: the `test-unit` extra (the fast tier) installs no Ray.
OPTIONAL = {"ray"}


def package_exceptions() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(mcp_notebook.__path__, "mcp_notebook."):
        if info.name.endswith("__main__"):
            continue  # running it would start the command line
        try:
            module = importlib.import_module(info.name)
        except ModuleNotFoundError as missing:  # an optional extra's module (ray_serve)
            if (missing.name or "").split(".")[0] not in OPTIONAL:
                raise
            continue
        found += [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, BaseException)
            and value.__module__ == module.__name__
        ]
    return found


def test_the_base_class_is_exported():
    assert "McpNotebookError" in mcp_notebook.__all__
    assert mcp_notebook.McpNotebookError is McpNotebookError


def test_every_exception_the_package_defines_derives_from_the_base():
    exceptions = package_exceptions()
    assert len(exceptions) >= 20  # the walk found the package's modules
    outside = [
        f"{e.__module__}.{e.__qualname__}"
        for e in exceptions
        if not issubclass(e, McpNotebookError)
    ]
    assert outside == []


@pytest.mark.parametrize(
    ("error", "standard"),
    [
        (NotFound("x"), LookupError),
        (UnsafeBind("x"), ValueError),
        (ArgumentError("x"), ValueError),
        (JsonTextError("x"), ValueError),
    ],
)
def test_existing_except_clauses_still_catch(error, standard):
    with pytest.raises(standard):
        raise error
