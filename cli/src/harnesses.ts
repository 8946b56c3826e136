import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SERVER_NAME } from "./marker.ts";
import { findEntry, replacingEntry, tableText, withEntry, type Launch } from "./toml-entry.ts";

/**
 * The agent harnesses `retasc setup` wires at user level, each in its own file in the person's
 * home: the watchdog proxy (`retasc mcp proxy`) as an MCP server named `retasc`. The entry names
 * no key, no URL and no folder: the proxy finds the key of the folder the harness starts it in
 * (the keystore, by path, as for a folder's `.mcp.json`), and in a folder that is not bound it
 * answers keyless (proxy-unbound.ts). A harness is found when its config folder (or file) exists.
 */
export type HarnessId = "claude-code" | "codex" | "cursor" | "opencode" | "gemini";

export interface Harness {
  id: HarnessId;
  name: string;
  /** Present when the harness is on this machine. */
  detect: string[];
  /** The user-level config file setup edits. */
  file: string;
  format: "json" | "toml";
  /** Where the servers live in a JSON file. */
  container?: "mcpServers" | "mcp";
}

const home = () => os.homedir();

/** OpenCode's global config: opencode.json, or an opencode.jsonc when that is the one there. */
function opencodeFile(dir: string): string {
  const json = path.join(dir, "opencode.json");
  const jsonc = path.join(dir, "opencode.jsonc");
  return !fs.existsSync(json) && fs.existsSync(jsonc) ? jsonc : json;
}

/** Every harness setup knows, with this machine's paths (CLAUDE_CONFIG_DIR, CODEX_HOME and XDG_CONFIG_HOME honoured). */
export function harnesses(): Harness[] {
  const claudeDir = process.env.CLAUDE_CONFIG_DIR?.trim();
  const claude = claudeDir
    ? { detect: [claudeDir], file: path.join(claudeDir, ".claude.json") }
    : { detect: [path.join(home(), ".claude.json"), path.join(home(), ".claude")], file: path.join(home(), ".claude.json") };
  const codexHome = process.env.CODEX_HOME || path.join(home(), ".codex");
  const opencodeDir = path.join(process.env.XDG_CONFIG_HOME || path.join(home(), ".config"), "opencode");
  return [
    { id: "claude-code", name: "Claude Code", ...claude, format: "json", container: "mcpServers" },
    { id: "codex", name: "Codex", detect: [codexHome], file: path.join(codexHome, "config.toml"), format: "toml" },
    { id: "cursor", name: "Cursor", detect: [path.join(home(), ".cursor")], file: path.join(home(), ".cursor", "mcp.json"), format: "json", container: "mcpServers" },
    { id: "opencode", name: "OpenCode", detect: [opencodeDir], file: opencodeFile(opencodeDir), format: "json", container: "mcp" },
    { id: "gemini", name: "Gemini CLI", detect: [path.join(home(), ".gemini")], file: path.join(home(), ".gemini", "settings.json"), format: "json", container: "mcpServers" },
  ];
}

/** The entry each JSON harness reads for a stdio server. */
function jsonEntry(harness: Harness, launch: Launch): Record<string, unknown> {
  if (harness.id === "opencode") return { type: "local", command: [launch.command, ...launch.args], enabled: true };
  if (harness.id === "claude-code") return { type: "stdio", command: launch.command, args: launch.args };
  return { command: launch.command, args: launch.args };
}

/** The command and args a JSON entry launches, in either shape (OpenCode's one array, or command + args). */
function launchOf(entry: unknown): Launch | null {
  if (!entry || typeof entry !== "object" || Array.isArray(entry)) return null;
  const e = entry as { command?: unknown; args?: unknown };
  if (Array.isArray(e.command) && e.command.every((p) => typeof p === "string") && e.command.length > 0) {
    const [command, ...args] = e.command as string[];
    return { command: command!, args };
  }
  if (typeof e.command !== "string") return null;
  const args = e.args === undefined ? [] : Array.isArray(e.args) && e.args.every((a) => typeof a === "string") ? (e.args as string[]) : null;
  return args ? { command: e.command, args } : null;
}

/** A launch of the watchdog: this CLI (from PATH or an absolute path) or the CLI a server serves, through npx, running `mcp proxy`. */
export function runsProxy(launch: Launch | null): boolean {
  if (!launch) return false;
  const tail = launch.args.slice(-2).join(" ") === "mcp proxy";
  if (path.basename(launch.command) === "retasc") return tail && launch.args.length === 2;
  return tail && path.basename(launch.command) === "npx" && launch.args[0] === "-y" && /\/cli\/latest$/.test(launch.args[1] ?? "") && launch.args.length === 4;
}

const sameLaunch = (a: Launch | null, b: Launch) => Boolean(a && a.command === b.command && a.args.length === b.args.length && a.args.every((x, i) => x === b.args[i]));

/** An agent key's shape, which no file setup writes may hold. */
const KEY = /\brt(?:sc|ci)_[A-Za-z0-9_-]{20,}/;

export type HarnessState =
  /** Not on this machine. */
  | "not-found"
  /** Its file runs the watchdog as `retasc`. */
  | "wired"
  /** Found, and no `retasc` server there (or ours, launched otherwise): setup writes it. */
  | "not-wired"
  /** A `retasc` server setup did not write (another command, a URL): left alone unless --replace. */
  | "other"
  /** The file is not one setup can edit safely (not JSON, JSON with comments, a shape it does not know). */
  | "unreadable";

export interface HarnessReport {
  id: HarnessId;
  name: string;
  file: string;
  state: HarnessState;
  /** What the `retasc` entry launches now, when it launches something. */
  launch: Launch | null;
  detail: string;
}

interface Read {
  state: HarnessState;
  launch: Launch | null;
  detail: string;
  /** The file's new text with our entry, or null when setup does not write it. */
  next: (launch: Launch, replace: boolean) => string | null;
}

function readText(file: string): string | null {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

/** The indentation a JSON text uses, so a rewrite changes as little as it can. */
const indentOf = (text: string): string | number => /^([ \t]+)"/m.exec(text)?.[1] ?? 2;

function readJsonHarness(harness: Harness, desired: Launch): Read {
  const text = readText(harness.file);
  let value: Record<string, unknown> = {};
  if (text !== null && text.trim() !== "") {
    try {
      const parsed: unknown = JSON.parse(text);
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not an object");
      value = parsed as Record<string, unknown>;
    } catch {
      const why = harness.file.endsWith(".jsonc") ? "has comments (JSONC), which setup does not rewrite" : "is not plain JSON";
      return { state: "unreadable", launch: null, detail: `${harness.file} ${why}: add the entry by hand (\`retasc setup --dry-run\` shows it)`, next: () => null };
    }
  }
  const servers = value[harness.container!];
  if (servers !== undefined && (!servers || typeof servers !== "object" || Array.isArray(servers))) {
    return { state: "unreadable", launch: null, detail: `${harness.file}: "${harness.container}" is not an object; add the entry by hand`, next: () => null };
  }
  const current = (servers as Record<string, unknown> | undefined)?.[SERVER_NAME];
  const launch = launchOf(current);
  const write = (entry: Record<string, unknown>) => {
    const copy = structuredClone(value);
    const into = ((copy[harness.container!] as Record<string, unknown> | undefined) ??= {});
    into[SERVER_NAME] = entry;
    return `${JSON.stringify(copy, null, text ? indentOf(text) : 2)}\n`;
  };
  if (current === undefined) {
    return { state: "not-wired", launch: null, detail: `no retasc server in ${harness.file}`, next: (l) => write(jsonEntry(harness, l)) };
  }
  const keyed = KEY.test(JSON.stringify(current));
  if (runsProxy(launch) && !keyed) {
    const state = sameLaunch(launch, desired) ? "wired" : "not-wired";
    // Ours, launched another way (the CLI moved): command and args rewritten, its other keys kept.
    const next = (l: Launch) => {
      const entry = { ...(current as Record<string, unknown>) };
      if (harness.id === "opencode") entry.command = [l.command, ...l.args];
      else Object.assign(entry, { command: l.command, args: l.args });
      return write(entry);
    };
    return { state, launch, detail: `${harness.file} runs ${[launch!.command, ...launch!.args].join(" ")}`, next };
  }
  const what = keyed ? "holds an agent key" : launch ? `runs ${[launch.command, ...launch.args].join(" ")}` : "is not the watchdog proxy";
  return { state: "other", launch, detail: `${harness.file}'s retasc server ${what}; setup leaves it (\`retasc setup --replace\` replaces it)`, next: (l, replace) => (replace ? write(jsonEntry(harness, l)) : null) };
}

function readTomlHarness(harness: Harness, desired: Launch): Read {
  const text = readText(harness.file) ?? "";
  const entry = findEntry(text);
  if (entry.kind === "none") return { state: "not-wired", launch: null, detail: `no [mcp_servers.retasc] in ${harness.file}`, next: (l) => withEntry(text, l) };
  if (entry.kind === "other") {
    return { state: "unreadable", launch: null, detail: `${harness.file} line ${entry.line + 1} sets a retasc server in a form setup does not edit: replace it with the table \`retasc setup --dry-run\` shows`, next: () => null };
  }
  const launch = entry.command !== null && entry.args !== null ? { command: entry.command, args: entry.args } : null;
  const block = text.split("\n").slice(entry.start, entry.end).join("\n");
  const keyed = KEY.test(block);
  if (runsProxy(launch) && !keyed) {
    return { state: sameLaunch(launch, desired) ? "wired" : "not-wired", launch, detail: `${harness.file} runs ${[launch!.command, ...launch!.args].join(" ")}`, next: (l) => withEntry(text, l) };
  }
  const what = keyed ? "holds an agent key" : launch ? `runs ${[launch.command, ...launch.args].join(" ")}` : "is not the watchdog proxy";
  return { state: "other", launch, detail: `${harness.file}'s [mcp_servers.retasc] ${what}; setup leaves it (\`retasc setup --replace\` replaces it)`, next: (l, replace) => (replace ? replacingEntry(text, l) : null) };
}

function read(harness: Harness, desired: Launch): Read {
  if (!harness.detect.some((p) => fs.existsSync(p))) return { state: "not-found", launch: null, detail: `not on this machine (no ${harness.detect.join(" or ")})`, next: () => null };
  return harness.format === "toml" ? readTomlHarness(harness, desired) : readJsonHarness(harness, desired);
}

/** Where each harness stands, against the launch setup would write. */
export function harnessReports(desired: Launch): HarnessReport[] {
  return harnesses().map((harness) => {
    const { state, launch, detail } = read(harness, desired);
    return { id: harness.id, name: harness.name, file: harness.file, state, launch, detail };
  });
}

export interface PlannedWrite extends HarnessReport {
  /** What setup does: writes the file, nothing (already wired, or not found), or cannot. */
  action: "write" | "none" | "leave" | "cannot";
  /** The file's text after the write, when it writes. */
  text: string | null;
}

/** What setup would do to each harness's file: idempotent (a wired file is not touched), never a key. */
export function planSetup(desired: Launch, options: { replace?: boolean } = {}): PlannedWrite[] {
  return harnesses().map((harness) => {
    const current = read(harness, desired);
    const report = { id: harness.id, name: harness.name, file: harness.file, state: current.state, launch: current.launch, detail: current.detail };
    if (current.state === "not-found" || current.state === "wired") return { ...report, action: "none" as const, text: null };
    if (current.state === "unreadable") return { ...report, action: "cannot" as const, text: null };
    const text = current.next(desired, Boolean(options.replace));
    if (text === null) return { ...report, action: current.state === "other" ? ("leave" as const) : ("cannot" as const), text: null };
    if (KEY.test(text) && !KEY.test(readText(harness.file) ?? "")) throw new Error(`refusing to write an agent key into ${harness.file}`);
    return { ...report, action: "write" as const, text };
  });
}

/** Writes one planned file atomically, keeping its mode. */
export function writePlanned(plan: PlannedWrite): void {
  if (plan.action !== "write" || plan.text === null) return;
  fs.mkdirSync(path.dirname(plan.file), { recursive: true });
  const mode = fs.existsSync(plan.file) ? fs.statSync(plan.file).mode & 0o777 : 0o644;
  const temp = `${plan.file}.retasc-${process.pid}.tmp`;
  fs.writeFileSync(temp, plan.text, { mode });
  fs.chmodSync(temp, mode);
  fs.renameSync(temp, plan.file);
}

/** The entry as it goes into each harness's file, for --dry-run and for a file setup cannot edit. */
export function entrySnippet(id: HarnessId, launch: Launch): string {
  const harness = harnesses().find((h) => h.id === id)!;
  if (harness.format === "toml") return tableText(launch).trimEnd();
  return JSON.stringify({ [harness.container!]: { [SERVER_NAME]: jsonEntry(harness, launch) } }, null, 2);
}
