"""Static checks CI enforces through the test run: the core's types and the import contracts.

Both read their configuration from pyproject.toml: ``[tool.mypy]`` (wire/ and registry/
checked strictly) and ``[tool.importlinter]`` (layers, forbidden imports, no cycles).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    # The checked-out tree first on the path, whatever copy of the package is installed.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}
    )


def test_the_core_passes_mypy_strict():
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_import_contracts_hold():
    executable = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    result = run(executable, "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr
