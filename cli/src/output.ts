/** Output conventions: data (and --json) on stdout, human notes on stderr. */

/** @param {string} line */
export function note(line = "") {
  process.stderr.write(`${line}\n`);
}

/** @param {string} line */
export function ok(line) {
  process.stderr.write(`✓ ${line}\n`);
}

/** @param {unknown} value */
export function printJson(value) {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** @param {string} line */
export function out(line) {
  process.stdout.write(`${line}\n`);
}

/**
 * Columns aligned for a terminal.
 * @param {string[]} header
 * @param {(string|number|null|undefined)[][]} rows
 */
export function table(header, rows) {
  const cells = [header, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? "—" : String(c))))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  return cells.map((r) => r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd()).join("\n");
}
