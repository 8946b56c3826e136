import fs from "node:fs";
import path from "node:path";
import { CliError } from "../errors.ts";
import { note, out, printJson, table } from "../output.ts";
import { readStdinSecret } from "../prompt.ts";
import type { OrgFlags } from "./manage.ts";

/**
 * What each source of `retasc import` sends (./import.ts): its credential (from
 * RETASC_IMPORT_TOKEN or standard input, never a flag: flags land in shell history), its own
 * flags as the body's fields, and how it picks what to import from the list the server gives.
 */
export type ImportFlags = OrgFlags & {
  team?: string;
  epic?: string;
  site?: string;
  email?: string;
  "project-key"?: string;
  "asana-project"?: string;
  list?: string;
  space?: string;
  file?: string;
  name?: string;
  prefix?: string;
  mapping?: string;
  project?: string;
  "new-project"?: string;
  "dry-run"?: boolean;
  "keep-credential"?: boolean;
  "poll-ms"?: string;
  json?: boolean;
};

export const SOURCES = ["linear", "jira", "asana", "shortcut", "clickup", "csv"] as const;
export type Source = (typeof SOURCES)[number];

type Call = <T>(action: string, extra?: Record<string, unknown>) => Promise<T>;
export interface Picked {
  label: string;
  lastImportAt: string | null;
  /** What dry-run and start add to the body. */
  input: Record<string, unknown>;
}
export interface SourceBody {
  input: Record<string, unknown>;
  /** The choice to import, or null when it listed the choices as JSON and stopped. */
  pick: (call: Call) => Promise<Picked | null>;
}

async function secret(what: string, example: string): Promise<string> {
  const value = process.env.RETASC_IMPORT_TOKEN?.trim() || (await readStdinSecret());
  if (!value) throw new CliError("INVALID_INPUT", `no ${what}: set RETASC_IMPORT_TOKEN or pipe it on standard input`, example);
  return value;
}

function readJson(file: string, what: string): Record<string, unknown> {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch (error) {
    throw new CliError("INVALID_INPUT", `${what} ${file} could not be read as JSON: ${(error as Error).message}`, 'A mapping file is JSON: {"statuses": {"In Review": "doing"}, "priorities": {"P1": 2}}');
  }
}

/**
 * A source whose choices the server lists (`action`): the one `wanted` names, else the list as a
 * table (or JSON, when nothing was named) and a refusal saying how to name one.
 */
async function pickListed<T extends { lastImportAt: string | null }>(
  call: Call,
  json: boolean | undefined,
  spec: { action: string; wanted: string | undefined; matches: (item: T, wanted: string) => boolean; picked: (item: T) => Omit<Picked, "lastImportAt">; columns: string[]; row: (item: T) => (string | number)[]; unknown: string; missing: string; example: (items: T[]) => string },
): Promise<Picked | null> {
  const items = await call<T[]>(spec.action);
  const wanted = spec.wanted;
  const item = wanted ? items.find((i) => spec.matches(i, wanted)) : undefined;
  if (item) return { ...spec.picked(item), lastImportAt: item.lastImportAt };
  if (json && !wanted) {
    printJson({ [spec.action]: items });
    return null;
  }
  if (!json) out(table(spec.columns, items.map(spec.row)));
  throw new CliError(wanted ? "NOT_FOUND" : "INVALID_INPUT", wanted ? spec.unknown : spec.missing, spec.example(items));
}

/** A ClickUp List or Space as the CLI names it: an id (a List), a URL, or list:/space: with its id. */
function clickupWanted(flags: ImportFlags): string | undefined {
  const raw = (flags.list ?? flags.space)?.trim();
  if (!raw) return undefined;
  const kind = flags.list ? "list" : "space";
  const fromUrl = /\/v\/(li|s)\/([0-9A-Za-z_-]+)/.exec(raw);
  if (fromUrl) return `${fromUrl[1] === "li" ? "list" : "space"}:${fromUrl[2]}`;
  return /^(list|space):/.test(raw) ? raw : `${kind}:${raw}`;
}

type ShortcutTeam = { id: string; name: string; mentionName: string; issueCount: number; lastImportAt: string | null };
type ShortcutEpic = { id: string; name: string; state: string; issueCount: number; lastImportAt: string | null };
const teamColumns = ["NAME", "MENTION", "STORIES", "LAST IMPORT", "ID"];
const teamRow = (t: ShortcutTeam) => [t.name, `@${t.mentionName}`, t.issueCount, t.lastImportAt ?? "never", t.id];
const epicColumns = ["EPIC ID", "EPIC", "STATE", "STORIES", "LAST IMPORT"];
const epicRow = (e: ShortcutEpic) => [e.id, e.name, e.state, e.issueCount, e.lastImportAt ?? "never"];
const pickOne = "pick a team with --team <name>, or an epic with --epic <id or name>";

/** Shortcut with neither --team nor --epic: the teams and the epics the token sees, and a refusal saying how to name one. */
async function listShortcut(call: Call, json: boolean | undefined): Promise<null> {
  const teams = await call<ShortcutTeam[]>("teams");
  const epics = await call<ShortcutEpic[]>("epics");
  if (json) {
    printJson({ teams, epics });
    return null;
  }
  out(table(teamColumns, teams.map(teamRow)));
  out(table(epicColumns, epics.map(epicRow)));
  throw new CliError("INVALID_INPUT", pickOne, `retasc import shortcut --team ${JSON.stringify(teams[0]?.name ?? "Mobile")} --dry-run < shortcut-token.txt  (or --epic ${epics[0]?.id ?? "<id>"})`);
}

function pickShortcutTeam(call: Call, flags: ImportFlags, withMapping: Record<string, unknown>) {
  const wanted = flags.team?.trim().replace(/^@/, "").toLowerCase();
  return pickListed<ShortcutTeam>(call, flags.json, {
    action: "teams",
    wanted,
    matches: (t, w) => t.id.toLowerCase() === w || t.name.toLowerCase() === w || t.mentionName.toLowerCase() === w,
    picked: (t) => ({ label: `${t.name} (Shortcut)`, input: { team: t.id, ...withMapping } }),
    columns: teamColumns,
    row: teamRow,
    unknown: `the token sees no Shortcut team ${flags.team}`,
    missing: pickOne,
    example: (teams) => `retasc import shortcut --team ${JSON.stringify(teams[0]?.name ?? "Mobile")} --dry-run < shortcut-token.txt`,
  });
}

/**
 * An epic by its id, its URL (…/epic/<id>/…) or its name, as the server resolves it (its `epic`
 * action), which refuses a name two epics have, an epic the token does not see and an archived one.
 */
async function pickShortcutEpic(call: Call, flags: ImportFlags, withMapping: Record<string, unknown>): Promise<Picked> {
  const e = await call<ShortcutEpic>("epic", { epic: flags.epic?.trim() ?? "" });
  return { label: `${e.name} (Shortcut epic)`, lastImportAt: e.lastImportAt, input: { epic: e.id, ...withMapping } };
}

/** The source's own flags as the body's fields, and how it picks what to import. */
export async function sourceBody(source: Source, flags: ImportFlags): Promise<SourceBody> {
  const mapping = flags.mapping ? readJson(flags.mapping, "the mapping file") : undefined;
  const withMapping = mapping ? { mapping } : {};
  if (source === "linear") {
    const apiKey = await secret("Linear API key", "retasc import linear --team ENG --new-project Engineering < linear-key.txt");
    const wanted = flags.team?.trim();
    return {
      input: { apiKey },
      pick: (call) =>
        pickListed<{ id: string; key: string; name: string; issueCount: number; lastImportAt: string | null }>(call, flags.json, {
          action: "teams",
          wanted,
          matches: (t, w) => t.key.toLowerCase() === w.toLowerCase() || t.id === w,
          picked: (t) => ({ label: t.key, input: { teamId: t.id, ...withMapping } }),
          columns: ["KEY", "NAME", "ISSUES", "LAST IMPORT", "ID"],
          row: (t) => [t.key, t.name, t.issueCount, t.lastImportAt ?? "never", t.id],
          unknown: `the key sees no Linear team ${wanted}`,
          missing: "pick a team with --team <KEY>",
          example: (teams) => `retasc import linear --team ${teams[0]?.key ?? "ENG"} --new-project ${JSON.stringify(teams[0]?.name ?? "Engineering")}`,
        }),
    };
  }
  if (source === "jira") {
    // Cloud takes the account's email with an API token; a Data Center site a personal access token alone (the server tells them apart).
    if (!flags.site) throw new CliError("INVALID_INPUT", "name the Jira site: --site <url> (and --email <address> on Jira Cloud)", "retasc import jira --site https://acme.atlassian.net --email me@acme.com --project-key ENG --dry-run < token.txt");
    const apiToken = await secret("Jira API token or personal access token", "retasc import jira --site https://acme.atlassian.net --email me@acme.com --project-key ENG < token.txt");
    const wanted = flags["project-key"]?.trim();
    return {
      input: { site: flags.site, ...(flags.email ? { email: flags.email } : {}), apiToken },
      pick: (call) =>
        pickListed<{ key: string; name: string; issueCount: number; lastImportAt: string | null }>(call, flags.json, {
          action: "projects",
          wanted,
          matches: (p, w) => p.key.toLowerCase() === w.toLowerCase(),
          picked: (p) => ({ label: p.key, input: { projectKey: p.key, ...withMapping } }),
          columns: ["KEY", "NAME", "ISSUES", "LAST IMPORT"],
          row: (p) => [p.key, p.name, p.issueCount, p.lastImportAt ?? "never"],
          unknown: `the account sees no Jira project ${wanted}`,
          missing: "pick a project with --project-key <KEY>",
          example: (projects) => `retasc import jira --site ${flags.site}${flags.email ? ` --email ${flags.email}` : ""} --project-key ${projects[0]?.key ?? "ENG"} --dry-run < token.txt`,
        }),
    };
  }
  if (source === "asana") {
    const accessToken = await secret("Asana personal access token", "retasc import asana --asana-project 1200000000000000 --dry-run < asana-token.txt");
    const wanted = flags["asana-project"]?.trim();
    const gid = wanted ? (/^\d+$/.test(wanted) ? wanted : (/\/(?:project|0)\/(\d+)/.exec(wanted)?.[1] ?? "")) : "";
    return {
      input: { accessToken },
      pick: (call) =>
        pickListed<{ id: string; name: string; workspace: string; issueCount: number; lastImportAt: string | null }>(call, flags.json, {
          action: "projects",
          wanted,
          matches: (p, w) => p.id === gid || p.name.toLowerCase() === w.toLowerCase(),
          picked: (p) => ({ label: `${p.name} (Asana)`, input: { projectGid: p.id, ...withMapping } }),
          columns: ["GID", "NAME", "WORKSPACE", "TASKS", "LAST IMPORT"],
          row: (p) => [p.id, p.name, p.workspace, p.issueCount, p.lastImportAt ?? "never"],
          unknown: `the token sees no Asana project ${wanted}`,
          missing: "pick a project with --asana-project <gid or name>",
          example: (projects) => `retasc import asana --asana-project ${projects[0]?.id ?? "1200000000000000"} --dry-run < asana-token.txt`,
        }),
    };
  }
  if (source === "shortcut") {
    if (flags.team && flags.epic) throw new CliError("INVALID_INPUT", "pass --team or --epic, not both", "retasc import shortcut --epic \"Checkout revamp\" --dry-run < shortcut-token.txt");
    const apiToken = await secret("Shortcut API token", "retasc import shortcut --team Mobile --dry-run < shortcut-token.txt");
    return { input: { apiToken }, pick: (call) => (flags.epic ? pickShortcutEpic(call, flags, withMapping) : flags.team ? pickShortcutTeam(call, flags, withMapping) : listShortcut(call, flags.json)) };
  }
  if (source === "clickup") {
    if (flags.list && flags.space) throw new CliError("INVALID_INPUT", "pass --list or --space, not both", "retasc import clickup --list 901200000101 --dry-run < clickup-token.txt");
    const apiToken = await secret("ClickUp personal API token", "retasc import clickup --list 901200000101 --dry-run < clickup-token.txt");
    const wanted = clickupWanted(flags);
    return {
      input: { apiToken },
      pick: (call) =>
        pickListed<{ kind: string; location: string; name: string; workspace: string; space: string; issueCount: number; lastImportAt: string | null }>(call, flags.json, {
          action: "locations",
          wanted,
          matches: (l, w) => l.location === w || `${l.kind}:${l.name.toLowerCase()}` === w.toLowerCase(),
          picked: (l) => ({ label: `${l.name} (ClickUp ${l.kind === "space" ? "Space" : "List"})`, input: { location: l.location, ...withMapping } }),
          columns: ["KIND", "ID", "NAME", "SPACE", "WORKSPACE", "TASKS", "LAST IMPORT"],
          row: (l) => [l.kind, l.location.slice(l.kind.length + 1), l.name, l.space, l.workspace, l.issueCount, l.lastImportAt ?? "never"],
          unknown: `the token sees no ClickUp ${wanted?.startsWith("space:") ? "Space" : "List"} ${flags.list ?? flags.space}`,
          missing: "pick a List with --list <id or URL>, or a Space with --space <id or URL>",
          example: (found) => `retasc import clickup --list ${found.find((l) => l.kind === "list")?.location.slice(5) ?? "901200000101"} --dry-run < clickup-token.txt`,
        }),
    };
  }
  if (!flags.file) throw new CliError("INVALID_INPUT", "name the file: --file <path.csv>", "retasc import csv --file board.csv --dry-run");
  let csv: string;
  try {
    csv = fs.readFileSync(flags.file, "utf8");
  } catch (error) {
    throw new CliError("NOT_FOUND", `${flags.file} could not be read: ${(error as Error).message}`, "retasc import csv --file board.csv --dry-run");
  }
  const name = flags.name?.trim() || path.basename(flags.file);
  return {
    input: { csv },
    async pick(call) {
      if (mapping) return { label: name, lastImportAt: null, input: { name, mapping } };
      // Without a mapping file, the one guessed from the header, shown so it can be saved and edited.
      const preview = await call<{ columns: string[]; rowCount: number; mapping: Record<string, unknown>; statuses: Record<string, string>; priorities: Record<string, number> }>("preview");
      if (!flags.json) {
        note(`${preview.rowCount} rows; columns ${preview.columns.join(", ")}`);
        note(`mapping guessed from the header (save it, edit it, pass it with --mapping <file.json>): ${JSON.stringify({ ...preview.mapping, statuses: preview.statuses, priorities: preview.priorities })}`);
      }
      return { label: name, lastImportAt: null, input: { name, mapping: { ...preview.mapping, statuses: preview.statuses, priorities: preview.priorities } } };
    },
  };
}
