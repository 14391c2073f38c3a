"""The notebook cells and safe shell lines of README.md and docs/: each page's, in order, in a
fresh kernel (a real ipykernel), as a reader pasting them would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from jupyter_client.manager import start_new_kernel

from tests.docs.blocks import ROOT, blocks, pages, shell_words
from tests.kernels import Kernel

RUNNABLE = [page for page in pages() if any(b.runs in ("kernel", "shell") for b in blocks(page))]


class PageKernel(Kernel):
    """A kernel of its own for one page, in the page's folder and runtime folder."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.manager, self.client = start_new_kernel(
            kernel_name="python3", startup_timeout=60, cwd=str(cwd), env=env
        )


def page_env(tmp_path: Path) -> dict[str, str]:
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "MCP_NOTEBOOK_RUNTIME_DIR": str(runtime)}


def run_shell(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    words = shell_words(command)
    if words[0] == "mcp-notebook":
        words = [sys.executable, "-m", "mcp_notebook", *words[1:]]
    elif words[0] == "jupyter":
        words = [sys.executable, "-m", "jupyter", *words[1:]]
    return subprocess.run(words, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_page_s_blocks_run_as_written(page: Path, tmp_path: Path):
    env = page_env(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    kernel = None
    try:
        for block in blocks(page):
            if block.runs == "kernel":
                if kernel is None:
                    kernel = PageKernel(work, env)
                reply, output = kernel.try_run(block.code, timeout=120)
                content = reply["content"]
                assert content["status"] == "ok", (
                    f"{block.where} fails in a fresh kernel: {content.get('ename')}: "
                    f"{content.get('evalue')}\n{output}"
                )
            elif block.runs == "shell":
                for command in block.commands():
                    done = run_shell(command, work, env)
                    assert done.returncode == 0, (
                        f"{block.where}: `{command}` exited {done.returncode}:\n"
                        f"{done.stdout}{done.stderr}"
                    )
    finally:
        if kernel is not None:
            kernel.shutdown()
