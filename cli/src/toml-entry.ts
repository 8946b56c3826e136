/**
 * The one TOML edit `retasc setup` makes: the `[mcp_servers.retasc]` table of Codex's
 * `config.toml` (a stdio server: `command` and `args`). No TOML library is in the lockfile and the
 * CLI ships one runtime dependency, so this reads and edits lines, never re-serialises the file:
 * every other line (comments, other servers, formatting) stays byte for byte. What it does not
 * recognise as the table it wrote (an inline `retasc = { … }`, a dotted key, a multi-line array
 * in the table) it leaves alone and says so (decision 088).
 */
export interface Launch {
  command: string;
  args: string[];
}

const OUR_HEADER = /^\s*\[\s*mcp_servers\s*\.\s*(?:retasc|"retasc"|'retasc')\s*\]\s*(?:#.*)?$/;
const OUR_SUBTABLE = /^\s*\[\s*mcp_servers\s*\.\s*(?:retasc|"retasc"|'retasc')\s*\./;
const ANY_HEADER = /^\s*\[/;
/** A retasc server written some other way: `retasc = {…}` under [mcp_servers], `mcp_servers.retasc.x = …`, or an inline table. */
const OTHER_FORM = /^\s*(?:(?:mcp_servers\s*\.\s*)?(?:retasc|"retasc"|'retasc')\s*[.=]|mcp_servers\s*=\s*\{.*\bretasc\b)/;

/** The lines of a text, and the lines that open a table (outside multi-line strings). */
function tableLines(lines: string[]): boolean[] {
  const opens: boolean[] = [];
  let inside: string | null = null;
  for (const line of lines) {
    if (inside) {
      opens.push(false);
      if (line.includes(inside)) inside = null;
      continue;
    }
    opens.push(ANY_HEADER.test(line));
    const triple = /("""|''')/.exec(line.replace(/#.*$/, ""));
    // An opening triple quote with no closing one on the same line starts a multi-line string.
    if (triple && line.split(triple[1]!).length === 2) inside = triple[1]!;
  }
  return opens;
}

/** A TOML basic ("…") or literal ('…') string at the start of `text`, and its length, or null. */
function stringAt(text: string): [string, number] | null {
  const basic = /^"((?:[^"\\]|\\.)*)"/.exec(text);
  if (basic) {
    try {
      return [JSON.parse(`"${basic[1]}"`) as string, basic[0].length];
    } catch {
      return null;
    }
  }
  const literal = /^'([^']*)'/.exec(text);
  return literal ? [literal[1]!, literal[0].length] : null;
}

function parseValue(line: string, key: string): unknown {
  const match = new RegExp(`^\\s*${key}\\s*=\\s*(.*)$`).exec(line);
  if (!match) return undefined;
  const rest = match[1]!.trim();
  if (rest.startsWith("[")) {
    const items: string[] = [];
    let text = rest.slice(1).trim();
    while (!text.startsWith("]")) {
      const item = stringAt(text);
      if (!item) return null;
      items.push(item[0]);
      text = text.slice(item[1]).trim().replace(/^,/, "").trim();
      if (!text) return null; // the array goes on past this line
    }
    return items;
  }
  const value = stringAt(rest);
  return value ? value[0] : null;
}

export type TomlEntry =
  /** No retasc server in the file. */
  | { kind: "none" }
  /** Our table: where it is, and its command and args (null where a line is not one this reads). */
  | { kind: "table"; start: number; end: number; command: string | null; args: string[] | null; commandLine: number; argsLine: number }
  /** A retasc server in a form this does not edit. */
  | { kind: "other"; line: number };

/** The retasc server of a config.toml text. */
export function findEntry(text: string): TomlEntry {
  const lines = text.split("\n");
  const opens = tableLines(lines);
  const start = lines.findIndex((line, i) => opens[i] && OUR_HEADER.test(line));
  if (start === -1) {
    const other = lines.findIndex((line) => OTHER_FORM.test(line));
    return other === -1 ? { kind: "none" } : { kind: "other", line: other };
  }
  let end = start + 1;
  while (end < lines.length && !(opens[end] && !OUR_SUBTABLE.test(lines[end]!))) end++;
  // Its own keys run to its first sub-table; trailing blank lines belong to what follows.
  let own = start + 1;
  while (own < end && !opens[own]) own++;
  while (end > start + 1 && lines[end - 1]!.trim() === "") end--;
  let command: string | null = null;
  let args: string[] | null = null;
  let commandLine = -1;
  let argsLine = -1;
  for (let i = start + 1; i < own; i++) {
    const c = parseValue(lines[i]!, "command");
    if (c !== undefined) {
      commandLine = i;
      command = typeof c === "string" ? c : null;
    }
    const a = parseValue(lines[i]!, "args");
    if (a !== undefined) {
      argsLine = i;
      args = Array.isArray(a) ? a : null;
    }
  }
  return { kind: "table", start, end, command, args, commandLine, argsLine };
}

const tomlString = (value: string) => JSON.stringify(value);
export const commandLine = (launch: Launch) => `command = ${tomlString(launch.command)}`;
export const argsLine = (launch: Launch) => `args = [${launch.args.map(tomlString).join(", ")}]`;

/** The table as setup writes it. */
export const tableText = (launch: Launch) => `[mcp_servers.retasc]\n${commandLine(launch)}\n${argsLine(launch)}\n`;

/**
 * The text with the retasc table launching `launch`: appended when there is none; in our table,
 * the `command` and `args` lines rewritten in place (its other keys, comments and sub-tables kept)
 * when both are single lines, else the table replaced. Refuses (null) a server in another form.
 */
export function withEntry(text: string, launch: Launch): string | null {
  const entry = findEntry(text);
  if (entry.kind === "other") return null;
  if (entry.kind === "none") {
    const body = text.length === 0 ? "" : text.endsWith("\n") ? `${text}\n` : `${text}\n\n`;
    return `${body}${tableText(launch)}`;
  }
  const lines = text.split("\n");
  if (entry.command !== null && entry.args !== null) {
    lines[entry.commandLine] = commandLine(launch);
    lines[entry.argsLine] = argsLine(launch);
    return lines.join("\n");
  }
  lines.splice(entry.start, entry.end - entry.start, ...tableText(launch).trimEnd().split("\n"));
  return lines.join("\n");
}

/** The text with the retasc server, whatever its form, replaced by ours (`setup --replace`): null when it is not a table this can find the end of. */
export function replacingEntry(text: string, launch: Launch): string | null {
  const entry = findEntry(text);
  if (entry.kind === "other") return null;
  if (entry.kind === "none") return withEntry(text, launch);
  const lines = text.split("\n");
  lines.splice(entry.start, entry.end - entry.start, ...tableText(launch).trimEnd().split("\n"));
  return lines.join("\n");
}
