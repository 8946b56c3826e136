import { CliError } from "../errors.ts";
import { note, ok, out, printJson, say, table } from "../output.ts";
import { asSession, requireSession, type SignedIn } from "../session.ts";
import { sourceBody, SOURCES, type ImportFlags, type Source } from "./import-sources.ts";
import { orgIdOf } from "./manage.ts";

/**
 * `retasc import <linear|jira|asana|shortcut|clickup|csv>`: another tracker's backlog into a project, through
 * /api/cli/import/<source> (app/routes/api.cli.import.$source.ts) as the signed-in owner or
 * admin. A credential (Linear key, Jira API token, Asana access token, Shortcut API token, ClickUp
 * personal token) comes from RETASC_IMPORT_TOKEN or standard input, never a flag (flags land in
 * shell history; ./import-sources.ts), and travels in a request body only; the
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
  /** About how long this step has left, at the run's pace so far. */
  etaSeconds?: number | null;
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

/** Sources without a key of their own: a new project is given a prefix, and issues take its next numbers. */
const KEYLESS: readonly Source[] = ["asana", "shortcut", "clickup", "csv"];

const PHASE_WORDS: Record<Status["phase"], string> = {
  fetching: "reading the source",
  applying: "writing issues",
  linking: "linking parents and relations",
  done: "done",
  failed: "failed",
};

export async function importFrom(flags: ImportFlags, positionals: string[]) {
  if (KEPT_VERBS.includes(positionals[0] ?? "")) return kept(flags, positionals);
  const source = positionals[0] as Source;
  if (!SOURCES.includes(source)) throw new CliError("INVALID_INPUT", `retasc import takes linear, jira, asana, shortcut, clickup or csv, not ${positionals[0] ?? "nothing"}`, "retasc import jira --site https://acme.atlassian.net --email me@acme.com --project-key ENG --dry-run < token.txt");
  if (flags.project && flags["new-project"]) throw new CliError("INVALID_INPUT", "pass --project or --new-project, not both", `retasc import ${source} … --new-project Engineering`);
  const pollMs = Number(flags["poll-ms"] ?? 1000);
  if (!Number.isInteger(pollMs) || pollMs < 50) throw new CliError("INVALID_INPUT", "--poll-ms takes a whole number of milliseconds, at least 50", `retasc import ${source} … --poll-ms 1000`);
  const endpoint = `/import/${source}`;
  const body = await sourceBody(source, flags);
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
  const started = await call<{ runId: string; total: number }>("start", { ...picked.input, ...target, ...(flags["keep-credential"] ? { keepCredential: true } : {}) });
  if (flags["keep-credential"]) note(`the credential is kept, sealed under the org's key: retasc import again ${source} <id> (retasc import kept names it)`);
  const status = await follow(session, endpoint, orgId, started.runId, pollMs, Boolean(flags.json));
  if (status.phase === "failed") throw new CliError("UNAVAILABLE", `the import of ${picked.label} failed: ${status.error ?? "no reason given"}`, "Run the same command again: a re-import reconciles, it never duplicates.");
  if (flags.json) return printJson(status);
  ok(`Imported ${picked.label}: ${Object.entries(status.counts ?? {}).map(([k, v]) => `${v} ${k}`).join(", ") || `${status.total} issues`}.`);
  if (status.linkReasons && Object.keys(status.linkReasons).length > 0) note(`attachments kept as links: ${whyLinks(status.linkReasons)}`);
  say(`Run ${status.runId}.${KEYLESS.includes(source) ? "" : ` Issues keep their identifiers (${status.teamKey}-1 and on).`}`);
}

const KEPT_VERBS = ["kept", "again", "forget"];

/** `retasc import kept | again <source> <id> | forget <source> <id>`: the credentials kept to import again (decision 094). */
async function kept(flags: ImportFlags, positionals: string[]) {
  const [verb, source, sourceId] = positionals;
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const endpoint = "/import/kept";
  if (verb === "kept") {
    const rows = await asSession<{ source: string; sourceId: string; keptBy: string | null; keptAt: string; usedAt: string | null }[]>(session, endpoint, { body: { orgId, action: "list" } });
    if (flags.json) return printJson(rows);
    if (rows.length === 0) return say("No credential is kept. Import with --keep-credential to keep one.");
    return out(table(["SOURCE", "ID", "KEPT BY", "KEPT", "LAST USED"], rows.map((r) => [r.source, r.sourceId, r.keptBy ?? "", r.keptAt, r.usedAt ?? "never"])));
  }
  if (!source || !sourceId) throw new CliError("INVALID_INPUT", `retasc import ${verb} takes a source and what it reads`, `retasc import ${verb} linear <team id>  (retasc import kept lists them)`);
  if (verb === "forget") {
    await asSession(session, endpoint, { body: { orgId, action: "forget", source, sourceId } });
    return ok(`Forgot the ${source} credential for ${sourceId}.`);
  }
  const pollMs = Number(flags["poll-ms"] ?? 1000);
  const started = await asSession<{ runId: string }>(session, endpoint, { body: { orgId, action: "again", source, sourceId } });
  const status = await follow(session, endpoint, orgId, started.runId, Number.isInteger(pollMs) && pollMs >= 50 ? pollMs : 1000, Boolean(flags.json));
  if (status.phase === "failed") throw new CliError("UNAVAILABLE", `the import of ${source} ${sourceId} failed: ${status.error ?? "no reason given"}`, `retasc import again ${source} ${sourceId}: a re-import reconciles, it never duplicates.`);
  if (flags.json) return printJson(status);
  ok(`Imported ${source} ${sourceId} again: ${Object.entries(status.counts ?? {}).map(([k, v]) => `${v} ${k}`).join(", ")}.`);
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
    const eta = status.etaSeconds ? `  ~${status.etaSeconds < 90 ? `${status.etaSeconds} s` : `${Math.round(status.etaSeconds / 60)} min`} left` : "";
    const line = `${PHASE_WORDS[status.phase]}  ${bar(status.done, status.total)} ${status.done}/${status.total}${eta}${waiting}`;
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
