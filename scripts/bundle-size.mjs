#!/usr/bin/env node
// Prints the JavaScript a browser downloads on a first visit to every Dash page (gzip), from
// the client manifest of a finished build: the client entry, root, the Dash layout and the
// page's own route chunk, with everything they import. Exits 1 if a page exceeds the budget.
// `node scripts/bundle-size.mjs [buildDir]` (default: RETASC_BUILD_DIR or build).
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";

const BUDGET_KB = 250;
const buildDir = path.resolve(process.argv[2] ?? process.env.RETASC_BUILD_DIR ?? "build");
const clientDir = path.join(buildDir, "client");
const assets = path.join(clientDir, "assets");
const manifestFile = fs.existsSync(assets) ? fs.readdirSync(assets).find((f) => /^manifest-.*\.js$/.test(f)) : undefined;
if (!manifestFile) {
  process.stderr.write(`no client manifest in ${assets}: run \`react-router build\` first\n`);
  process.exit(2);
}
const source = fs.readFileSync(path.join(assets, manifestFile), "utf8");
const manifest = JSON.parse(source.slice(source.indexOf("{"), source.lastIndexOf("}") + 1));

const gzipped = new Map();
function gzipSize(url) {
  if (!gzipped.has(url)) gzipped.set(url, zlib.gzipSync(fs.readFileSync(path.join(clientDir, url)), { level: 9 }).length);
  return gzipped.get(url);
}

/** A page's first load: the entry, then each route from root down to the page. */
function firstLoad(routeIds) {
  const js = new Set([manifest.entry.module, ...manifest.entry.imports]);
  const css = new Set();
  for (const id of routeIds) {
    const route = manifest.routes[id];
    if (!route) throw new Error(`route ${id} is not in the manifest`);
    js.add(route.module);
    for (const file of route.imports ?? []) js.add(file);
    for (const file of route.css ?? []) css.add(file);
  }
  const sum = (files) => [...files].reduce((total, file) => total + gzipSize(file), 0);
  return { js: sum(js), css: sum(css), files: js.size };
}

// Every Dash page (a route under the Dash layout with a component; resource routes ship no JS),
// read from the manifest, so a page added later is held to the budget without being listed.
const pages = Object.values(manifest.routes)
  .filter((route) => route.parentId === "routes/dash" && route.hasDefaultExport)
  .map((route) => [route.index ? "/dash" : `/dash/${route.path}`, route.id]);
const kb = (bytes) => (bytes / 1024).toFixed(1);
let over = false;
process.stdout.write(`\nDash first-load JavaScript (gzip), budget ${BUDGET_KB} KB:\n`);
for (const [label, id] of pages) {
  const size = firstLoad(["root", "routes/dash", id]);
  const fits = size.js <= BUDGET_KB * 1024;
  over ||= !fits;
  process.stdout.write(
    `  ${label.padEnd(26)} ${kb(size.js).padStart(6)} KB JS in ${size.files} files, ${kb(size.css).padStart(5)} KB CSS  ${fits ? "ok" : "OVER BUDGET"}\n`,
  );
}
process.exit(over ? 1 : 0);
