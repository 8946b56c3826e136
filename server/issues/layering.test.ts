import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const here = path.dirname(fileURLToPath(import.meta.url));

/** Every module specifier a file imports or re-exports, static or dynamic. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  return [...text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)].map((m) => m[1]!);
}

describe("server/issues and server/queue", () => {
  it("depend one way: the queue builds on issues, issues never import the queue", () => {
    const offenders = fs
      .readdirSync(here)
      .filter((name) => name.endsWith(".ts") && !name.endsWith(".test.ts"))
      .flatMap((name) => importsOf(path.join(here, name)).filter((spec) => /(^|\/)queue\//.test(spec)).map((spec) => `${name}: ${spec}`));
    expect(offenders).toEqual([]);
  });
});
