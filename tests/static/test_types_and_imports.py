"""Static checks CI enforces through the test run (the ``static`` tier, run once by plain
``python -m pytest``, not by ``-m unit``): the package's types and the import contracts.

Both read their configuration from pyproject.toml: ``[tool.mypy]`` (every module strictly)
and ``[tool.importlinter]`` (layers, forbidden imports, no cycles).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    # The checked-out tree first on the path, whatever copy of the package is installed.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}
    )


def test_the_package_passes_mypy_strict():
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_import_contracts_hold():
    executable = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    result = run(executable, "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr


MISSPELT = """
from mcp_notebook.protocol.calls import CallRecord
from mcp_notebook.protocol.session import Session

Session(era="moderne")
record = CallRecord("tools/call", "add", {}, "client")
record.set_status("runing")
record.finish("finished")
"""


def test_mypy_rejects_a_misspelt_era_or_call_status(tmp_path):
    snippet = tmp_path / "misspelt.py"
    snippet.write_text(MISSPELT)
    result = run(sys.executable, "-m", "mypy", "--no-incremental", str(snippet))
    report = result.stdout + result.stderr
    assert result.returncode == 1, report
    for line, word in ((5, "moderne"), (7, "runing"), (8, "finished")):
        assert f"misspelt.py:{line}: error:" in report and f"'{word}'" in report, report
