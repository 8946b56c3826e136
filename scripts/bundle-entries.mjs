#!/usr/bin/env node
// `node scripts/bundle-entries.mjs ENTRY=OUT_FILE...`: bundles TypeScript entries of this repo that
// tests start as processes (the app, the workers, the swarm's agents) into one ES module each
// (server/testing/entry-bundle.ts names the files). Under tsx a process resolves and transforms
// hundreds of modules through loader hooks; from one file its boot took half the CPU (decision 082).
// Packages stay imports, resolved from OUT_FILE's place inside this repo's node_modules/.cache, and
// every source file keeps its own import.meta (url, dirname, filename), so whatever a module reads
// relative to itself (the migrations, the docs, the markdown worker) is found as from source.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const pairs = process.argv.slice(2).map((arg) => arg.split("="));
if (pairs.length === 0 || pairs.some((pair) => pair.length !== 2)) {
  process.stderr.write("usage: node scripts/bundle-entries.mjs ENTRY=OUT_FILE...\n");
  process.exit(2);
}
const root = path.resolve(import.meta.dirname, "..");

/** Each source file's import.meta as it would be unbundled. */
const ownImportMeta = {
  name: "own-import-meta",
  setup(b) {
    b.onLoad({ filter: /\.tsx?$/ }, async (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const source = await fs.promises.readFile(args.path, "utf8");
      const contents = source
        .replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href))
        .replaceAll("import.meta.dirname", JSON.stringify(path.dirname(args.path)))
        .replaceAll("import.meta.filename", JSON.stringify(args.path));
      return { contents, loader: args.path.endsWith(".tsx") ? "tsx" : "ts" };
    });
  },
};

await Promise.all(
  pairs.map(async ([entry, target]) => {
    fs.mkdirSync(path.dirname(target), { recursive: true });
    // Written beside and renamed: a process another test starts meanwhile never reads half a file.
    const partial = `${target}.${process.pid}.partial`;
    await build({
      entryPoints: [path.resolve(root, entry)],
      outfile: partial,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      packages: "external",
      logLevel: "error",
      plugins: [ownImportMeta],
    });
    fs.renameSync(partial, target);
  }),
);
