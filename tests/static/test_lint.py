"""The code base stays ruff-clean (lint and format), as the project's standards require."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    return subprocess.run([executable, *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_check_is_clean():
    result = ruff("check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr
