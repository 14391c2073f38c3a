// esbuild with the options build.sh needs: minified browser bundles, fonts left out
// (the widgets' icon font would triple the size of every widget view), and a metafile
// listing what went in, for the licence file.
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import path from "node:path";

const [work, out] = process.argv.slice(2);
const require = createRequire(path.join(work, "package.json"));
const esbuild = require("esbuild");
const common = {
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2020",
  platform: "browser",
  legalComments: "none",
  absWorkingDir: work,
  metafile: true,
  define: { "process.env.NODE_ENV": '"production"', global: "window" },
  loader: { ".woff": "empty", ".woff2": "empty", ".ttf": "empty", ".eot": "empty", ".svg": "empty" },
  logLevel: "warning",
};
const inputs = new Set();
for (const [entry, file] of [["view.js", "view.min.js"], ["widgets.js", "widgets.min.js"]]) {
  const result = await esbuild.build({ ...common, entryPoints: [path.join(work, entry)], outfile: path.join(out, file) });
  for (const input of Object.keys(result.metafile.inputs)) inputs.add(input);
}
writeFileSync(path.join(work, "inputs.json"), JSON.stringify([...inputs]));
