import { spawnSync } from "node:child_process";
import path from "node:path";
import { expect, it } from "vitest";
import { testBuildDir } from "../server/testing/app-process.ts";

/** The Dash's first-load JavaScript budget holds on a real build (the same script `npm run build` ends with). */
it("keeps every Dash page's first-load JavaScript under 250 KB gzip", () => {
  const script = path.resolve(import.meta.dirname, "bundle-size.mjs");
  const result = spawnSync(process.execPath, [script, testBuildDir()], { encoding: "utf8" });
  expect(result.status, result.stdout + result.stderr).toBe(0);
  const sizes = [...result.stdout.matchAll(/^\s+(\/dash\S*).*?([\d.]+) KB JS/gm)].map((m) => [m[1], Number(m[2])] as const);
  // Every page of the Dash, the settings pages too (resource routes such as /dash/events ship none).
  expect(sizes.map(([page]) => page)).toEqual(expect.arrayContaining(["/dash", "/dash/queue", "/dash/issues/:identifier", "/dash/issues/new", "/dash/settings/keys", "/dash/settings/import"]));
  expect(sizes.map(([page]) => page)).not.toContain("/dash/events");
  for (const [, kb] of sizes) expect(kb).toBeGreaterThan(50); // react + react-router at least: the manifest was read
});
