/**
 * Output conventions: what a command tells people goes to stdout (to stderr under --json,
 * where stdout holds only the JSON); diagnostics (progress, warnings, errors) go to stderr.
 * Marks are coloured only on a terminal, never under NO_COLOR (https://no-color.org);
 * FORCE_COLOR colours a pipe too.
 */
let jsonMode = false;

/** Set once per command line: with --json, stdout is the payload alone. */
export function setJsonMode(on: boolean): void {
  jsonMode = on;
}

const people = (): NodeJS.WriteStream => (jsonMode ? process.stderr : process.stdout);

export function colored(stream: NodeJS.WriteStream): boolean {
  if (process.env.NO_COLOR) return false;
  if (process.env.FORCE_COLOR && process.env.FORCE_COLOR !== "0") return true;
  return Boolean(stream.isTTY);
}

const paint = (stream: NodeJS.WriteStream, code: number, text: string): string => (colored(stream) ? `\u001b[${code}m${text}\u001b[39m` : text);
export const green = (stream: NodeJS.WriteStream, text: string) => paint(stream, 32, text);
export const red = (stream: NodeJS.WriteStream, text: string) => paint(stream, 31, text);
export const yellow = (stream: NodeJS.WriteStream, text: string) => paint(stream, 33, text);

/** A line for people: the command's result. */
export function say(line = ""): void {
  people().write(`${line}\n`);
}

/** A result line with a check mark. */
export function ok(line: string): void {
  const stream = people();
  stream.write(`${green(stream, "✓")} ${line}\n`);
}

/** A diagnostic: progress, a warning, a note about the result; always stderr. */
export function note(line = ""): void {
  process.stderr.write(`${line}\n`);
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A value for scripts (a key, a path): stdout, whatever the mode. */
export function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Columns aligned for a terminal. */
export function table(header: string[], rows: (string | number | null | undefined)[][]): string {
  const cells = [header, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? "—" : String(c))))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  return cells.map((r) => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ").trimEnd()).join("\n");
}

/**
 * A table printed a page at a time, as a paged list arrives: the header with the first rows, each
 * page aligned on its own. `printed` says whether any row was.
 */
export function tableWriter(header: string[], before = ""): { write(rows: (string | number | null | undefined)[][]): void; readonly printed: boolean } {
  let printed = false;
  return {
    write(rows) {
      if (rows.length === 0) return;
      const text = table(header, rows);
      out(printed ? text.slice(text.indexOf("\n") + 1) : `${before}${text}`);
      printed = true;
    },
    get printed() {
      return printed;
    },
  };
}

