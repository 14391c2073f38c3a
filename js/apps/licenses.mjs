// The licence of every npm package that went into the bundles (from esbuild's metafile).
import { readFileSync, writeFileSync, readdirSync, existsSync } from "node:fs";
import path from "node:path";

const [work, target] = process.argv.slice(2);
const inputs = JSON.parse(readFileSync(path.join(work, "inputs.json"), "utf8"));
const packages = new Map();
for (const input of inputs) {
  const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//g);
  if (!match) continue;
  const dir = path.join(work, match.join("").replace(/\/$/, ""));
  packages.set(dir, true);
}
const parts = ["Third-party software bundled in view.min.js, widgets.min.js and widgets.min.css.\n"];
for (const dir of [...packages.keys()].sort()) {
  const meta = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
  const file = readdirSync(dir).find((f) => /^(licen[cs]e|copying)/i.test(f));
  const text = file && existsSync(path.join(dir, file)) ? readFileSync(path.join(dir, file), "utf8") : `License: ${meta.license}`;
  parts.push(`${"=".repeat(78)}\n${meta.name} ${meta.version} (${meta.license})\n${"=".repeat(78)}\n${text.trim()}\n`);
}
writeFileSync(target, parts.join("\n"));
