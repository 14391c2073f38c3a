#!/usr/bin/env bash
# Builds the view bundles that mcp_notebook vendors in mcp_notebook/apps/static/:
#   view.min.js      the official MCP Apps view SDK (`App`, npm @modelcontextprotocol/ext-apps)
#                    and view.js, the glue every app document runs
#   widgets.min.js   ipywidgets' HTML manager (npm @jupyter-widgets/html-manager) and
#   widgets.min.css  widgets.js, inlined only into documents that hold widgets, with
#                    anywidget.js (anywidget's models; acorn, npm acorn, parses their ESM)
#   THIRD-PARTY-LICENSES.txt  the licences of everything bundled
# Run once when the pinned versions in package.json change (then `npm install
# --package-lock-only` here), commit the output; the package
# never fetches anything at run time. Needs node and npm (any registry mirror npm is set to).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../../mcp_notebook/apps/static"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$here/package.json" "$here/package-lock.json" "$here/view.js" "$here/widgets.js" "$here/anywidget.js" "$work/"
# The lock file pins every transitive version: the same inputs give the same bundles.
(cd "$work" && npm ci --no-audit --no-fund --ignore-scripts >/dev/null)
esbuild="$work/node_modules/esbuild/bin/esbuild"
[ -x "$esbuild" ] || esbuild="$work/node_modules/.bin/esbuild"
(cd "$work" && node "$here/esbuild-run.mjs" "$work" "$out")
node "$here/licenses.mjs" "$work" "$out/THIRD-PARTY-LICENSES.txt"
ls -l "$out"
