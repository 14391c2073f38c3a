"""The PEP 517 build backend of mcp-notebook-runtime: the wheel and the sdist of the modules
that mcp_notebook/export/runtime_modules.py lists, written by mcp_notebook/export/wheel.py.

The source tree is the checkout's (``..``) or, in an unpacked sdist, this folder. The two
modules are loaded from their files, under a private name: whatever ``mcp_notebook`` is
installed where the build runs plays no part.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
PRIVATE = "_mcp_notebook_runtime_build"


def _root() -> Path:
    return HERE if (HERE / "mcp_notebook").is_dir() else HERE.parent


def _wheel_module() -> ModuleType:
    if PRIVATE not in sys.modules:
        folder = _root() / "mcp_notebook" / "export"
        spec = importlib.util.spec_from_file_location(
            PRIVATE, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
        assert spec is not None and spec.loader is not None
        package = importlib.util.module_from_spec(spec)
        sys.modules[PRIVATE] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{PRIVATE}.wheel")


def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: Any = None) -> list[str]:
    return []


def build_wheel(
    wheel_directory: str, config_settings: Any = None, metadata_directory: Any = None
) -> str:
    return _wheel_module().build_wheel(_root(), Path(wheel_directory)).name


def build_sdist(sdist_directory: str, config_settings: Any = None) -> str:
    return _wheel_module().build_sdist(_root(), HERE, Path(sdist_directory)).name
