"""The JupyterLab extension the package ships (labextension/, built by
js/labextension/build.sh from js/labextension/): the committed output is the build of the
committed sources, its comm protocol matches the kernel side's (ui/cellinsert.py), and the
wheel installs it where JupyterLab looks. Nothing here runs npm; rebuilding is build.sh's
job (its output is reproducible: the same inputs give the same files)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from mcp_notebook import __version__
from mcp_notebook.ui import cellinsert, frontends, panelfeed

CHECKOUT = Path(__file__).resolve().parents[3]
SOURCE = CHECKOUT / "js" / "labextension"
BUILT = CHECKOUT / "labextension"
REBUILD = "stale: run js/labextension/build.sh and commit labextension/"


def source_package() -> dict:
    return json.loads((SOURCE / "package.json").read_text())


def built_package() -> dict:
    return json.loads((BUILT / "package.json").read_text())


def test_the_built_package_is_the_source_package_plus_its_build():
    source, built = source_package(), built_package()
    assert built["name"] == source["name"] == "mcp-notebook"
    assert built["version"] == source["version"] == __version__, "bump package.json; rebuild"
    for key in ("dependencies", "devDependencies", "main"):
        assert built[key] == source[key], REBUILD
    load = built["jupyterlab"]["_build"]["load"]
    assert re.fullmatch(r"static/remoteEntry\.[0-9a-f]{20}\.js", load)
    assert (BUILT / load).is_file()


def test_the_recorded_digest_is_of_the_sources_build_sh_builds_from():
    build = (SOURCE / "build.sh").read_text()
    (inputs,) = re.findall(r"^inputs=\(([^)]*)\)$", build, flags=re.M)
    recorded = {}
    for line in (BUILT / "SOURCES.sha256").read_text().splitlines():
        digest, name = line.split("  ", 1)
        recorded[name] = digest
    assert sorted(recorded) == sorted(inputs.split())
    for name, digest in recorded.items():
        assert hashlib.sha256((SOURCE / name).read_bytes()).hexdigest() == digest, (
            f"{name} changed since the build: {REBUILD}"
        )
    assert json.loads((BUILT / "install.json").read_text())["packageName"] == "mcp-notebook"


def test_static_holds_the_bundle_and_only_files_it_loads():
    static = BUILT / "static"
    entry = (BUILT / built_package()["jupyterlab"]["_build"]["load"]).read_text()
    chunks = {p.name for p in static.glob("*.js")} - {"style.js"}
    assert len(chunks) >= 2  # the remote entry and the plugin's chunk
    for chunk in chunks - {Path(built_package()["jupyterlab"]["_build"]["load"]).name}:
        _, digest, _ = chunk.split(".")  # ID.HASH.js: the entry's loader knows the hash
        assert digest in entry, f"{chunk} is stale"
    bundle = "".join(p.read_text() for p in static.glob("*.js"))
    assert "mcp-notebook:cells" in bundle  # the plugins
    assert "mcp-notebook:trusted-answers" in bundle  # the one guarding confirmations
    assert "mcp-notebook:panel" in bundle
    for target in (frontends.HELLO, frontends.TARGET, panelfeed.PANEL):
        assert json.dumps(target) in bundle or f"'{target}'" in bundle
    # The plugins' own code (the panel's about 33 KB minified): JupyterLab's and Lumino's
    # modules are shared with the page, not bundled.
    assert sum(p.stat().st_size for p in static.iterdir()) < 60_000
    licences = json.loads((static / "third-party-licenses.json").read_text())
    assert licences["packages"] == []  # nothing third-party is bundled


def test_the_kernel_and_the_extension_agree_on_the_comm():
    source = (SOURCE / "src" / "index.ts").read_text()
    (hello,) = re.findall(r"export const HELLO = '([^']+)';", source)
    (target,) = re.findall(r"export const TARGET = '([^']+)';", source)
    (limit,) = re.findall(r"export const MAX_CODE = ([\d *]+);", source)
    assert (hello, target) == (frontends.HELLO, frontends.TARGET)
    product = 1
    for factor in limit.split("*"):
        product *= int(factor)
    assert product == cellinsert.MAX_CODE


def test_the_wheel_installs_it_where_jupyterlab_looks():
    pyproject = (CHECKOUT / "pyproject.toml").read_text()  # tomllib: Python 3.11+ only
    section = pyproject.split("[tool.hatch.build.targets.wheel.shared-data]", 1)[1]
    section = section.split("\n[", 1)[0]
    # JupyterLab finds a prebuilt extension in share/jupyter/labextensions/<its name>.
    name = built_package()["name"]
    assert f'"labextension" = "share/jupyter/labextensions/{name}"' in section


def test_the_extension_guards_the_card_the_kernel_draws():
    source = (SOURCE / "src" / "trusted.ts").read_text()
    (card,) = re.findall(r"export const CARD = '([^']+)';", source)
    panel = (CHECKOUT / "mcp_notebook" / "ui" / "confirm.py").read_text()
    assert f'self.add_class("{card}")' in panel
    for event in ("click", "keydown", "input"):
        assert f"'{event}'" in source
