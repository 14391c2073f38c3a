"""Public names imported on first use, for a package's ``__init__``: ``import
mcp_notebook`` (and ``mcp_notebook.protocol``) must stay cheap, so each name's module is
imported only when the name is first looked up (PEP 562). Imports nothing of the package."""

from __future__ import annotations

import importlib
from typing import Any


def load(namespace: dict[str, Any], where: dict[str, str], name: str) -> Any:
    """``name`` from its module (``where[name]``, relative to the package whose globals are
    ``namespace``), kept in ``namespace`` so later lookups do not come here."""
    module = where.get(name)
    package = namespace["__name__"]
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, package), name)
    namespace[name] = value
    return value


def names(namespace: dict[str, Any]) -> list[str]:
    """What ``dir()`` shows of such a package: its globals and its public names."""
    return sorted({*namespace, *namespace.get("__all__", ())})
