#!/usr/bin/env bash
# Builds mcp_notebook's JupyterLab 4 extension (src/index.ts: the call monitor's "Insert
# as cell"; src/trusted.ts: a confirmation card answers only trusted events) into
# labextension/ at the repository's root, which the wheel installs as
# share/jupyter/labextensions/mcp-notebook/ (pyproject.toml, shared-data):
#   package.json, static/   the prebuilt federated extension (`jupyter labextension build`)
#   install.json            tells `jupyter labextension list` the Python package ships it
#   SOURCES.sha256          the digest of the inputs below (tests/unit/ui/test_labextension.py
#                           checks the committed output was built from these sources)
# Run once when src/ or the pinned versions in package.json change (then `npm install
# --package-lock-only` here), commit the output; nothing is fetched at run time. Needs node,
# npm (any registry mirror npm is set to) and JupyterLab's Python package (the test extra):
# its core package.json says which modules JupyterLab shares (they are not bundled).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../../labextension"
python="${PYTHON:-python}"
inputs=(package.json package-lock.json tsconfig.json install.json src/index.ts src/cells.ts src/feed.ts
  src/panel.ts src/panelplugin.ts src/status.ts src/style.ts src/table.ts src/trusted.ts)
# Built at one fixed path: webpack's module ids hash the absolute path of the source, and
# the bundle must not depend on where the repository is checked out.
work="/tmp/mcp-notebook-labextension-build"
rm -rf "$work"
mkdir "$work"
trap 'rm -rf "$work"' EXIT
(cd "$here" && cp --parents "${inputs[@]}" "$work/")
# The lock file pins every transitive version: the same inputs give the same bundle.
(cd "$work" && npm ci --no-audit --no-fund --ignore-scripts >/dev/null)
(cd "$work" && node_modules/.bin/tsc -p .)
core="$("$python" -c 'import jupyterlab, pathlib; print(pathlib.Path(jupyterlab.__file__).parent / "staging" / "package.json")')"
(cd "$work" && "$python" -m jupyter labextension build . --core-package-file "$core" >/dev/null)
rm -rf "$out"
mkdir -p "$out"
cp -r "$work/built/package.json" "$work/built/static" "$out/"
cp "$work/install.json" "$out/"
(cd "$here" && sha256sum "${inputs[@]}") > "$out/SOURCES.sha256"
ls -l "$out" "$out/static"
