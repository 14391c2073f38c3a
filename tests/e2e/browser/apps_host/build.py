"""The test host's bundle: host.js with the official AppBridge and TypeScript SDK client,
from npm into the test cache (as tests/e2e/conformance/node.py installs the conformance suite),
bundled once by esbuild. Nothing of this reaches the package."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from tests.e2e.conformance.node import _npm_install, cache_dir, node22

HERE = Path(__file__).parent
# ext-apps brings its peer @modelcontextprotocol/client (the TypeScript SDK client 2.x,
# which AppBridge is built on): host.js imports that same copy.
EXT_APPS = "@modelcontextprotocol/ext-apps@2.0.4"
ESBUILD = "esbuild@0.28.2"


def host_bundle() -> Path:
    """The path of host.bundle.js, built again whenever host.js changes."""
    node = node22()
    prefixes = [cache_dir() / ("npm-" + spec.replace("/", "+")) for spec in (EXT_APPS, ESBUILD)]
    for prefix, spec in zip(prefixes, (EXT_APPS, ESBUILD), strict=True):
        _npm_install(prefix, spec, node_bin=node)
    modules = [str(prefix / "node_modules") for prefix in prefixes]
    source = HERE / "host.js"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    out = cache_dir() / f"apps-host-{digest}.bundle.js"
    if out.exists():
        return out
    esbuild = Path(modules[1]) / "esbuild" / "bin" / "esbuild"
    env = {**os.environ, "NODE_PATH": os.pathsep.join(modules)}
    env["PATH"] = f"{node.parent}{os.pathsep}{env.get('PATH', '')}"
    staging = out.with_suffix(".tmp.js")
    # bin/esbuild is the native binary once its install script ran, else a Node launcher.
    native = esbuild.read_bytes()[:4] == b"\x7fELF"
    command = [
        *([] if native else [str(node)]),
        str(esbuild),
        str(source),
        "--bundle",
        "--format=esm",
        "--platform=browser",
        f"--outfile={staging}",
        "--log-level=warning",
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"esbuild failed:\n{done.stdout}\n{done.stderr}")
    shutil.move(staging, out)
    return out
