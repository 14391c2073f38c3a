#!/usr/bin/env python
"""Start-up of an exported server: what `python -m PACKAGE` imports before it serves.

For each source tree given (default: this checkout; e.g. a `git archive` of an older
commit for "before"), exports notebooks/quickstart.ipynb (pandas) and a one-tool notebook
(no imports) with that tree, then runs `python -X importtime -c "<the imports of python -m
PACKAGE, stdio>"` several times, interleaved across trees, and reports the median total
import time, the number of modules and of the package's own modules loaded, and which
Jupyter or tornado modules came along. See README.md. Table on stdout.
"""

from __future__ import annotations

import argparse
import json
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


ONE_TOOL = {
    "cells": [
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": "@mcp.tool\ndef add(a: int, b: int) -> int:\n    return a + b",
        }
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def _env(*path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join(map(str, path))
    return env


def export(python: str, source: Path, notebook: Path, out: Path) -> str:
    """Export ``notebook`` with the exporter of ``source``; the package's name."""
    done = subprocess.run(
        [python, "-m", "mcp_notebook", "export", str(notebook), "-o", str(out)],
        capture_output=True,
        text=True,
        env=_env(source),
        cwd=out.parent,
        check=True,
    )
    return done.stdout.split()[1]  # "exported PACKAGE to DIR"


def measure(python: str, package: str, source: Path, where: Path) -> tuple[float, list[str]]:
    """Seconds of imports (the sum of the top-level modules' cumulative times), and the
    modules imported."""
    done = subprocess.run(
        [python, "-X", "importtime", "-c", IMPORTS.format(p=package)],
        capture_output=True,
        text=True,
        env=_env(where, source),
        cwd=where,
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
    parser.add_argument("sources", nargs="*", type=Path, default=[ROOT], help="source trees")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--python", default=sys.executable, help="the interpreter to measure")
    args = parser.parse_args()
    print(
        "| tree | notebook | import time (median) | modules | mcp_notebook modules | "
        "Jupyter/tornado loaded |"
    )
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        one_tool = Path(tmp) / "one_tool.ipynb"
        one_tool.write_text(json.dumps(ONE_TOOL), encoding="utf-8")
        cases = []
        for index, source in enumerate(args.sources):
            for notebook in (QUICKSTART, one_tool):
                out = Path(tmp) / f"{index}-{notebook.stem}"
                package = export(args.python, source.resolve(), notebook, out)
                cases.append((source.resolve(), notebook.stem, package, out))
        runs: dict[int, list[tuple[float, list[str]]]] = {i: [] for i in range(len(cases))}
        for _ in range(args.runs + 1):  # the first round warms the file cache
            for i, (source, _name, package, out) in enumerate(cases):
                runs[i].append(measure(args.python, package, source, out))
        for i, (source, name, _package, _out) in enumerate(cases):
            seconds = statistics.median(t for t, _ in runs[i][1:])
            modules = runs[i][1][1]
            own = [m for m in modules if m.startswith("mcp_notebook")]
            heavy = sorted({m.split(".")[0] for m in modules if m.split(".")[0] in HEAVY})
            print(
                f"| {source.name} | {name} | {seconds * 1000:.0f} ms | {len(modules)} | "
                f"{len(own)} | {', '.join(heavy) or 'none'} |"
            )


if __name__ == "__main__":
    main()
