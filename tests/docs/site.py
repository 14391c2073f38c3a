"""Build the documentation site the way CI does: Sphinx, every warning an error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.docs.blocks import DOCS, ROOT


def build(out: Path) -> subprocess.CompletedProcess[str]:
    """``sphinx-build -W --keep-going -b html docs OUT``: broken links and references fail."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-E", "-b", "html"]
    command += ["-d", str(out / ".doctrees"), str(DOCS), str(out / "html")]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
