"""Gemini CLI, Codex and the MCP Inspector's CLI, the real ones from the npm registry, run
on the Node 22 the conformance tests install (tests/e2e/conformance/node.py), into the same
test cache:

    <cache>/npm-@google+gemini-cli@VERSION/node_modules/@google/gemini-cli/bundle/gemini.js
    <cache>/npm-@openai+codex@VERSION/node_modules/@openai/codex/bin/codex.js
    <cache>/npm-@modelcontextprotocol+inspector@VERSION/.../clients/cli/build/index.js

Each runs with a fresh HOME: its settings (``~/.gemini``, ``~/.codex``) are the test's.
Neither needs a login or a model key for what is asked here: ``gemini mcp add/list``
(list connects to each server, in a folder the user trusts) and ``codex mcp add`` plus
its ``app-server`` JSON-RPC on stdio (``mcpServerStatus/list`` starts each server and
lists its tools).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests import portable
from tests.e2e.conformance.node import _npm_install, cache_dir, node22
from tests.waiting import read_until

NEEDS = (
    "Gemini CLI and Codex run on Node 22 from npm's node-linux-<arch> package, installed "
    "with npm into the test cache (the snippets' words are tested everywhere)"
)

GEMINI = "@google/gemini-cli@0.61.0"
CODEX = "@openai/codex@0.171.0"
# Its CLI checks served skills (SEP-2640: manifests, digests, frontmatter) with --verify.
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
TIMEOUT = 180  # seconds for one CLI command (gemini mcp list connects to every server)


def _installed(spec: str, entry: str) -> list[str]:
    portable.require_linux(NEEDS)
    node = node22()
    prefix = cache_dir() / ("npm-" + spec.replace("/", "+"))
    _npm_install(prefix, spec, node_bin=node)
    package = spec.rsplit("@", 1)[0]
    return [str(node), str(prefix / "node_modules" / package / entry)]


def gemini() -> list[str]:
    """argv that runs Gemini CLI; append e.g. ``mcp list``."""
    return _installed(GEMINI, "bundle/gemini.js")


def codex() -> list[str]:
    """argv that runs Codex; append e.g. ``mcp add ...``."""
    return _installed(CODEX, "bin/codex.js")


def inspector() -> list[str]:
    """argv that runs the MCP Inspector's CLI; append e.g. ``--method skills/list``."""
    return _installed(INSPECTOR, "clients/cli/build/index.js")


def environment(home: Path) -> dict[str, str]:
    """This process's environment (PYTHONPATH: the bridge imports this checkout) with a
    fresh HOME, Node 22 first on PATH, and no key that would let a CLI reach a model."""
    portable.require_linux(NEEDS)
    node_dir = str(node22().parent)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HOME=str(home), PATH=node_dir + os.pathsep + env.get("PATH", ""))
    env.pop("CODEX_HOME", None)
    return env


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def trust(home: Path, folder: Path) -> None:
    """Gemini CLI uses MCP servers only in folders the user trusts: trust ``folder``, as
    answering its first-start question (or /permissions) does."""
    settings = home / ".gemini"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "trustedFolders.json").write_text(json.dumps({str(folder): "TRUST_FOLDER"}))


def codex_servers(env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    """``mcpServerStatus/list`` of ``codex app-server``: each configured server, with its
    tools (Codex starts each one to list them)."""
    process = subprocess.Popen(
        [*codex(), "app-server"],
        env=env,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    assert process.stdin is not None
    try:
        for message in (
            {
                "id": 1,
                "method": "initialize",
                "params": {"clientInfo": {"name": "t", "version": "1"}},
            },
            {"method": "initialized"},
            {"id": 2, "method": "mcpServerStatus/list", "params": {}},
        ):
            process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        process.stdin.flush()
        line = read_until(
            lambda seconds: lines.get(timeout=seconds),
            lambda line: json.loads(line).get("id") == 2,
            "the reply to mcpServerStatus/list",
            TIMEOUT,
        )
        reply = json.loads(line)
        assert "result" in reply, reply
        return list(reply["result"]["data"])
    finally:
        process.stdin.close()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)
