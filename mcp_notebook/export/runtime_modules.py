"""The runtime distribution (``mcp-notebook-runtime``): which of the package's modules it is.

An exported notebook runs on these alone: the registry, the protocol core, the wire
format, the ASGI and stdio transports and the export runtime. The set is closed under
imports (tests/unit/export/test_runtime_modules.py, with grimp) apart from
:data:`LAZY_OUTSIDE`, and import-linter contracts in pyproject.toml keep the kernel, the
notebook UI, apps authoring, tornado and Jupyter out of it. Both the exporter (wheel.py,
the wheel inside an export) and ``runtime/pyproject.toml`` build it from this list.

Imports nothing (not even the package): the runtime's build backend reads it from a
source tree with nothing installed.
"""

from __future__ import annotations

from pathlib import Path

DISTRIBUTION = "mcp-notebook-runtime"
SUMMARY = "The kernel-free runtime of servers exported by mcp-notebook"
REQUIRES_PYTHON = ">=3.10"
# What the modules below import (and nothing else: pandas, matplotlib and Pillow are
# imported only when a notebook's own code made such values, and the export pins them).
REQUIRES = (
    "jsonschema>=4.20",
    # Answers "are these arguments valid?" ~100x faster; jsonschema explains the "no"s.
    "jsonschema-rs>=0.61",
    "pydantic>=2.7",
    # A skill folder's SKILL.md frontmatter (registry/skills.py, mcp.skill(path=...)).
    "pyyaml>=6.0",
    "typing-extensions>=4.12",
    # An exported server's OAuth 2.1 resource server (MCP_AUTH_ISSUER): JWT signatures.
    # Imported only when it is configured.
    "joserfc>=1.7",
)

# Whole subpackages (every module under them).
PACKAGES = (
    "mcp_notebook.auth",
    "mcp_notebook.protocol",
    "mcp_notebook.registry",
    "mcp_notebook.wire",
)
# Single modules; a package's own __init__ is named by the package.
MODULES = (
    "mcp_notebook",
    "mcp_notebook._version",
    "mcp_notebook.base",
    "mcp_notebook.errors",
    "mcp_notebook.exposure",
    "mcp_notebook.lazy",
    "mcp_notebook.registration",
    "mcp_notebook.skills",
    "mcp_notebook.resource_registration",
    "mcp_notebook.stdoutclaim",
    "mcp_notebook.stopping",
    "mcp_notebook.export",
    "mcp_notebook.export.http",
    "mcp_notebook.export.ray_serve",
    "mcp_notebook.export.runtime",
    "mcp_notebook.export.runtime_modules",
    "mcp_notebook.export.skill_folders",
    "mcp_notebook.export.stdio",
    "mcp_notebook.export.wheel",
    # The ASGI app and what it uses; not transports/http.py and its kin (tornado).
    "mcp_notebook.transports",
    "mcp_notebook.transports.admission",
    "mcp_notebook.transports.asgi",
    "mcp_notebook.transports.asgi_exchange",
    "mcp_notebook.transports.binding",
    "mcp_notebook.transports.dialects",
    "mcp_notebook.transports.headers",
    "mcp_notebook.transports.modern_checks",
    "mcp_notebook.transports.oauth",
    "mcp_notebook.transports.policy",
    "mcp_notebook.transports.posts",
    "mcp_notebook.transports.responses",
    "mcp_notebook.transports.security",
    "mcp_notebook.transports.seed_http",
    "mcp_notebook.transports.settings",
    "mcp_notebook.transports.sse",
)
# Files that are not modules.
DATA = ("mcp_notebook/py.typed",)

# Imports out of the runtime that run only inside a function, and why they may.
LAZY_OUTSIDE = {
    ("mcp_notebook", "mcp_notebook.app"): (
        "for type checkers only: `mcp` and NotebookMCP are looked up when first used (PEP "
        "562), an ImportError where only the runtime is installed"
    ),
    ("mcp_notebook", "mcp_notebook.kernel.extension"): (
        "%load_ext mcp_notebook: runs in a kernel only"
    ),
    ("mcp_notebook.registration", "mcp_notebook.apps"): (
        "only a tool with an app view (app=, mcp.app) imports apps/, whose renderers use "
        "IPython's display formatter and ipywidgets' embedding; the exporter reports such "
        "cells (export/extract.py)"
    ),
}


def module_names(root: Path) -> list[str]:
    """Every module of the runtime, under ``root`` (the folder holding ``mcp_notebook/``)."""
    names = set(MODULES)
    for package in PACKAGES:
        folder = root.joinpath(*package.split("."))
        for path in folder.rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(names)


def files(root: Path) -> list[str]:
    """The runtime's files under ``root``, as sorted ``/``-separated relative paths."""
    found = set(DATA)
    for name in module_names(root):
        parts = name.split(".")
        package = root.joinpath(*parts, "__init__.py")
        path = package if package.is_file() else root.joinpath(*parts[:-1], parts[-1] + ".py")
        if not path.is_file():
            raise FileNotFoundError(f"the runtime's module {name} is not under {root}")
        found.add(path.relative_to(root).as_posix())
    return sorted(found)
