/** Output conventions: data (and --json) on stdout, human notes on stderr. */

export function note(line = ""): void {
  process.stderr.write(`${line}\n`);
}

export function ok(line: string): void {
  process.stderr.write(`✓ ${line}\n`);
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Columns aligned for a terminal. */
export function table(header: string[], rows: (string | number | null | undefined)[][]): string {
  const cells = [header, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? "—" : String(c))))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  return cells.map((r) => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ").trimEnd()).join("\n");
}
