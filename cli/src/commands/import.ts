import fs from "node:fs";
import path from "node:path";
import { CliError } from "../errors.ts";
import { note, ok, out, printJson, say, table } from "../output.ts";
import { readStdinSecret } from "../prompt.ts";
import { asSession, requireSession, type SignedIn } from "../session.ts";
import { orgIdOf, type OrgFlags } from "./manage.ts";

/**
 * `retasc import <linear|jira|asana|shortcut|csv>`: another tracker's backlog into a project, through
 * /api/cli/import/<source> (app/routes/api.cli.import.$source.ts) as the signed-in owner or
 * admin. A credential (Linear key, Jira API token, Asana access token, Shortcut API token) comes from RETASC_IMPORT_TOKEN or standard
 * input, never a flag (flags land in shell history), and travels in a request body only; the
 * server uses it for this run alone. `--dry-run` prints what the run would do and writes
 * nothing; otherwise progress is polled and drawn on stderr until the run is done.
 */

interface Status {
  runId: string;
  teamKey: string;
  phase: "fetching" | "applying" | "linking" | "done" | "failed";
  done: number;
  total: number;
  counts: Record<string, number> | null;
  /** Why attachments stayed links: link (at the source), tooLarge, failed. */
  linkReasons?: Record<string, number>;
  error: string | null;
  waitingUntil: string | null;
  lastImportAt: string | null;
}
interface DryRun {
  counts: Record<string, number>;
  linkReasons?: Record<string, number>;
  known: Record<string, number>;
  statuses: { from: string; to: string; issues: number }[];
  priorities: { from: string; to: number; issues: number }[];
  ghosts: { name: string; email: string | null }[];
  leftBehind: string[];
}

type ImportFlags = OrgFlags & {
  team?: string;
  site?: string;
  email?: string;
  "project-key"?: string;
  "asana-project"?: string;
  file?: string;
  name?: string;
  prefix?: string;
  mapping?: string;
  project?: string;
  "new-project"?: string;
  "dry-run"?: boolean;
  "poll-ms"?: string;
};

const SOURCES = ["linear", "jira", "asana", "shortcut", "csv"] as const;
type Source = (typeof SOURCES)[number];
/** Sources without a key of their own: a new project is given a prefix, and issues take its next numbers. */
const KEYLESS: readonly Source[] = ["asana", "shortcut", "csv"];

const PHASE_WORDS: Record<Status["phase"], string> = {
  fetching: "reading the source",
  applying: "writing issues",
  linking: "linking parents and relations",
  done: "done",
  failed: "failed",
};

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

export async function importFrom(flags: ImportFlags, positionals: string[]) {
  const source = positionals[0] as Source;
  if (!SOURCES.includes(source)) throw new CliError("INVALID_INPUT", `retasc import takes linear, jira, asana, shortcut or csv, not ${positionals[0] ?? "nothing"}`, "retasc import jira --site https://acme.atlassian.net --email me@acme.com --project-key ENG --dry-run < token.txt");
  if (flags.project && flags["new-project"]) throw new CliError("INVALID_INPUT", "pass --project or --new-project, not both", `retasc import ${source} … --new-project Engineering`);
  const pollMs = Number(flags["poll-ms"] ?? 1000);
  if (!Number.isInteger(pollMs) || pollMs < 50) throw new CliError("INVALID_INPUT", "--poll-ms takes a whole number of milliseconds, at least 50", `retasc import ${source} … --poll-ms 1000`);
  const endpoint = `/import/${source}`;
  const body = await sourceBody(source, flags);
  if (!body) return;
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const call = <T>(action: string, extra: Record<string, unknown> = {}) => asSession<T>(session, endpoint, { body: { orgId, action, ...body.input, ...extra } });
  const picked = await body.pick(call);
  if (!picked) return;
  if (flags["dry-run"]) {
    const report = await call<DryRun>("dry-run", picked.input);
    if (flags.json) return printJson(report);
    return printDryRun(report);
  }
  if (!flags.project && !flags["new-project"]) {
    const keyless = KEYLESS.includes(source);
    throw new CliError("INVALID_INPUT", `name the project: --new-project <name>${keyless ? " --prefix <PFX>" : ""}, or --project <PREFIX> of an earlier import`, `retasc import ${source} … --new-project Engineering${keyless ? " --prefix ENG" : ""}`);
  }
  if (picked.lastImportAt) note(`${picked.label} was imported on ${picked.lastImportAt}: fields edited in Retasc since are overwritten by the source's.`);
  const projectId = flags.project ? await projectIdOf(session, orgId, flags.project) : undefined;
  const target = projectId ? { projectId } : { newProject: { name: flags["new-project"], ...(KEYLESS.includes(source) ? { prefix: flags.prefix } : {}) } };
  const started = await call<{ runId: string; total: number }>("start", { ...picked.input, ...target });
  const status = await follow(session, endpoint, orgId, started.runId, pollMs, Boolean(flags.json));
  if (status.phase === "failed") throw new CliError("UNAVAILABLE", `the import of ${picked.label} failed: ${status.error ?? "no reason given"}`, "Run the same command again: a re-import reconciles, it never duplicates.");
  if (flags.json) return printJson(status);
  ok(`Imported ${picked.label}: ${Object.entries(status.counts ?? {}).map(([k, v]) => `${v} ${k}`).join(", ") || `${status.total} issues`}.`);
  if (status.linkReasons && Object.keys(status.linkReasons).length > 0) note(`attachments kept as links: ${whyLinks(status.linkReasons)}`);
  say(`Run ${status.runId}.${KEYLESS.includes(source) ? "" : ` Issues keep their identifiers (${status.teamKey}-1 and on).`}`);
}

type Call = <T>(action: string, extra?: Record<string, unknown>) => Promise<T>;
interface Picked {
  label: string;
  lastImportAt: string | null;
  /** What dry-run and start add to the body. */
  input: Record<string, unknown>;
}

/** The source's own flags as the body's fields, and how it picks what to import (null: it listed the choices and stopped). */
async function sourceBody(source: Source, flags: ImportFlags & { json?: boolean }): Promise<{ input: Record<string, unknown>; pick: (call: Call) => Promise<Picked | null> } | null> {
  const mapping = flags.mapping ? readJson(flags.mapping, "the mapping file") : undefined;
  if (source === "linear") {
    const apiKey = await secret("Linear API key", "retasc import linear --team ENG --new-project Engineering < linear-key.txt");
    return {
      input: { apiKey },
      async pick(call) {
        const teams = await call<{ id: string; key: string; name: string; issueCount: number; lastImportAt: string | null }[]>("teams");
        const wanted = flags.team?.trim();
        const team = wanted ? teams.find((t) => t.key.toLowerCase() === wanted.toLowerCase() || t.id === wanted) : undefined;
        if (team) return { label: team.key, lastImportAt: team.lastImportAt, input: { teamId: team.id } };
        if (flags.json && !wanted) {
          printJson({ teams });
          return null;
        }
        if (!flags.json) out(table(["KEY", "NAME", "ISSUES", "LAST IMPORT", "ID"], teams.map((t) => [t.key, t.name, t.issueCount, t.lastImportAt ?? "never", t.id])));
        throw new CliError(wanted ? "NOT_FOUND" : "INVALID_INPUT", wanted ? `the key sees no Linear team ${wanted}` : "pick a team with --team <KEY>", `retasc import linear --team ${teams[0]?.key ?? "ENG"} --new-project ${JSON.stringify(teams[0]?.name ?? "Engineering")}`);
      },
    };
  }
  if (source === "jira") {
    if (!flags.site || !flags.email) throw new CliError("INVALID_INPUT", "name the Jira site and your Atlassian email: --site <url> --email <address>", "retasc import jira --site https://acme.atlassian.net --email me@acme.com --project-key ENG --dry-run < token.txt");
    const apiToken = await secret("Jira API token", "retasc import jira --site https://acme.atlassian.net --email me@acme.com --project-key ENG < token.txt");
    return {
      input: { site: flags.site, email: flags.email, apiToken },
      async pick(call) {
        const projects = await call<{ key: string; name: string; issueCount: number; lastImportAt: string | null }[]>("projects");
        const wanted = flags["project-key"]?.trim();
        const project = wanted ? projects.find((p) => p.key.toLowerCase() === wanted.toLowerCase()) : undefined;
        if (project) return { label: project.key, lastImportAt: project.lastImportAt, input: { projectKey: project.key, ...(mapping ? { mapping } : {}) } };
        if (flags.json && !wanted) {
          printJson({ projects });
          return null;
        }
        if (!flags.json) out(table(["KEY", "NAME", "ISSUES", "LAST IMPORT"], projects.map((p) => [p.key, p.name, p.issueCount, p.lastImportAt ?? "never"])));
        throw new CliError(wanted ? "NOT_FOUND" : "INVALID_INPUT", wanted ? `the account sees no Jira project ${wanted}` : "pick a project with --project-key <KEY>", `retasc import jira --site ${flags.site} --email ${flags.email} --project-key ${projects[0]?.key ?? "ENG"} --dry-run < token.txt`);
      },
    };
  }
  if (source === "asana") {
    const accessToken = await secret("Asana personal access token", "retasc import asana --asana-project 1200000000000000 --dry-run < asana-token.txt");
    return {
      input: { accessToken },
      async pick(call) {
        const projects = await call<{ id: string; name: string; workspace: string; issueCount: number; lastImportAt: string | null }[]>("projects");
        const wanted = flags["asana-project"]?.trim();
        const gid = wanted ? (/^\d+$/.test(wanted) ? wanted : (/\/(?:project|0)\/(\d+)/.exec(wanted)?.[1] ?? "")) : "";
        const project = wanted ? projects.find((p) => p.id === gid || p.name.toLowerCase() === wanted.toLowerCase()) : undefined;
        if (project) return { label: `${project.name} (Asana)`, lastImportAt: project.lastImportAt, input: { projectGid: project.id, ...(mapping ? { mapping } : {}) } };
        if (flags.json && !wanted) {
          printJson({ projects });
          return null;
        }
        if (!flags.json) out(table(["GID", "NAME", "WORKSPACE", "TASKS", "LAST IMPORT"], projects.map((p) => [p.id, p.name, p.workspace, p.issueCount, p.lastImportAt ?? "never"])));
        throw new CliError(wanted ? "NOT_FOUND" : "INVALID_INPUT", wanted ? `the token sees no Asana project ${wanted}` : "pick a project with --asana-project <gid or name>", `retasc import asana --asana-project ${projects[0]?.id ?? "1200000000000000"} --dry-run < asana-token.txt`);
      },
    };
  }
  if (source === "shortcut") {
    const apiToken = await secret("Shortcut API token", "retasc import shortcut --team Mobile --dry-run < shortcut-token.txt");
    return {
      input: { apiToken },
      async pick(call) {
        const teams = await call<{ id: string; name: string; mentionName: string; issueCount: number; lastImportAt: string | null }[]>("teams");
        const wanted = flags.team?.trim().replace(/^@/, "").toLowerCase();
        const team = wanted ? teams.find((t) => t.id.toLowerCase() === wanted || t.name.toLowerCase() === wanted || t.mentionName.toLowerCase() === wanted) : undefined;
        if (team) return { label: `${team.name} (Shortcut)`, lastImportAt: team.lastImportAt, input: { team: team.id, ...(mapping ? { mapping } : {}) } };
        if (flags.json && !wanted) {
          printJson({ teams });
          return null;
        }
        if (!flags.json) out(table(["NAME", "MENTION", "STORIES", "LAST IMPORT", "ID"], teams.map((t) => [t.name, `@${t.mentionName}`, t.issueCount, t.lastImportAt ?? "never", t.id])));
        throw new CliError(wanted ? "NOT_FOUND" : "INVALID_INPUT", wanted ? `the token sees no Shortcut team ${flags.team}` : "pick a team with --team <name>", `retasc import shortcut --team ${JSON.stringify(teams[0]?.name ?? "Mobile")} --dry-run < shortcut-token.txt`);
      },
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

function printDryRun(report: DryRun) {
  say("Dry run: nothing was written.");
  const c = report.counts;
  out(table(["ISSUES", "CONTAINERS", "COMMENTS", "ATTACHMENTS", "AS FILES", "AS LINKS", "RELATIONS", "LABELS", "ALREADY HERE"], [[c.issues, c.containers, c.comments, c.attachments, c.filesCopied ?? 0, c.linksKept ?? c.attachments, c.relations, c.labels, report.known.issues]]));
  if (report.linkReasons && Object.keys(report.linkReasons).length > 0) note(`attachments kept as links: ${whyLinks(report.linkReasons)}`);
  out(table(["STATUS THERE", "STATUS HERE", "ISSUES"], report.statuses.map((s) => [s.from, s.to, s.issues])));
  out(table(["PRIORITY THERE", "PRIORITY HERE", "ISSUES"], report.priorities.map((p) => [p.from, p.to, p.issues])));
  if (report.ghosts.length > 0) out(table(["PLACEHOLDER FOR", "EMAIL"], report.ghosts.map((g) => [g.name, g.email ?? "(none given)"])));
  for (const line of report.leftBehind) note(`left behind: ${line}`);
}

const linkWords: Record<string, string> = { link: "links at the source", tooLarge: "over the 10 MiB attachment limit", failed: "could not be downloaded" };
const whyLinks = (reasons: Record<string, number>) => Object.entries(reasons).map(([reason, n]) => `${n} ${linkWords[reason] ?? reason}`).join(", ");

/** A project of the org by its prefix (or id). */
async function projectIdOf(session: SignedIn, orgId: string, wanted: string): Promise<string> {
  const { projects } = await asSession<{ projects: { id: string; prefix: string }[] }>(session, "/projects", { query: { orgId } });
  const project = projects.find((p) => p.prefix.toLowerCase() === wanted.toLowerCase() || p.id === wanted);
  if (!project) throw new CliError("NOT_FOUND", `no project ${wanted} in this org`, "retasc import linear --team ENG --new-project Engineering");
  return project.id;
}

/** Polls the run until it ends, drawing `phase  done/total` on stderr (on a terminal, in place), and a wait the source asked for. */
async function follow(session: SignedIn, endpoint: string, orgId: string, runId: string, pollMs: number, quiet: boolean): Promise<Status> {
  const tty = process.stderr.isTTY && !quiet;
  let last = "";
  for (;;) {
    const status = await asSession<Status>(session, endpoint, { query: { orgId, runId } });
    const waiting = status.waitingUntil ? `  (the source asked us to wait until ${status.waitingUntil})` : "";
    const line = `${PHASE_WORDS[status.phase]}  ${bar(status.done, status.total)} ${status.done}/${status.total}${waiting}`;
    if (!quiet && line !== last) {
      if (tty) process.stderr.write(`\r\x1b[2K${line}`);
      else note(line);
      last = line;
    }
    if (status.phase === "done" || status.phase === "failed") {
      if (tty) process.stderr.write("\n");
      return status;
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

function bar(done: number, total: number, width = 24): string {
  const filled = total > 0 ? Math.min(width, Math.round((done / total) * width)) : 0;
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
}
