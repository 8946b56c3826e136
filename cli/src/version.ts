import fs from "node:fs";

/** This CLI's version, from its package.json (one directory above dist/, in the build and the tarball alike). */
export const cliVersion = (): string =>
  (JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** Whether version `a` is older than `b` (major.minor.patch; a pre-release counts as its release). */
export function olderThan(a: string, b: string): boolean {
  const parts = (v: string) => v.split("-")[0]!.split(".").map((n) => Number(n) || 0);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) < (y[i] ?? 0);
  return false;
}
