#!/usr/bin/env python
"""Start-up of an exported server: what `python -m PACKAGE` imports before it serves.

Exports notebooks/quickstart.ipynb, then runs `python -X importtime -c "import
PACKAGE.__main__'s imports"` several times (the notebook's code and the runtime's stdio
server, without serving) and reports the median total import time, the number of modules
and of the package's own modules loaded, and which Jupyter or tornado modules came along.
See README.md. Table on stdout.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "notebooks" / "quickstart.ipynb"
HEAVY = ("IPython", "ipykernel", "ipywidgets", "jupyter_client", "nbformat", "tornado")
# What `python -m PACKAGE` (stdio) imports before it reads stdin.
IMPORTS = "import {p}.notebook, mcp_notebook.export.runtime, mcp_notebook.export.stdio"
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)")


def measure(python: str, package: str, where: Path) -> tuple[float, list[str]]:
    """Seconds of imports (the sum of the top-level modules' cumulative times), and the
    modules imported."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(where), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [python, "-X", "importtime", "-c", IMPORTS.format(p=package)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    total, modules = 0, []
    for line in done.stderr.splitlines():
        found = LINE.match(line)
        if not found:
            continue
        modules.append(found.group(4))
        if len(found.group(3)) == 1:  # top level: its time includes its children's
            total += int(found.group(2))
    return total / 1e6, modules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--python", default=sys.executable, help="the interpreter to measure")
    args = parser.parse_args()
    from mcp_notebook.export.package import export_notebook

    with tempfile.TemporaryDirectory() as tmp:
        result = export_notebook(QUICKSTART, Path(tmp) / "quickstart")
        measure(args.python, result.package, result.directory)  # warm the file cache
        runs = [measure(args.python, result.package, result.directory) for _ in range(args.runs)]
    seconds = statistics.median(t for t, _ in runs)
    modules = runs[0][1]
    own = [m for m in modules if m.startswith("mcp_notebook")]
    heavy = sorted({m.split(".")[0] for m in modules if m.split(".")[0] in HEAVY})
    print("| import time (median) | modules | mcp_notebook modules | Jupyter/tornado loaded |")
    print("|---|---|---|---|")
    print(f"| {seconds * 1000:.0f} ms | {len(modules)} | {len(own)} | {', '.join(heavy) or 'none'} |")


if __name__ == "__main__":
    main()
