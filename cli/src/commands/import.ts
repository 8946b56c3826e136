import { CliError } from "../errors.ts";
import { note, ok, printJson, say, table, out } from "../output.ts";
import { readStdinSecret } from "../prompt.ts";
import { asSession, requireSession, type SignedIn } from "../session.ts";
import { orgIdOf, type OrgFlags } from "./manage.ts";

/**
 * `retasc import linear`: a Linear team into a project, through /api/cli/import/linear
 * (app/routes/api.cli.import.linear.ts) as the signed-in owner or admin. The Linear key comes
 * from RETASC_IMPORT_TOKEN or standard input, never a flag (flags land in shell history), and
 * travels in a request body only; the server uses it for this run alone. Progress is polled and
 * drawn on stderr until the run is done.
 */

interface Team {
  id: string;
  key: string;
  name: string;
  issueCount: number;
  lastImportAt: string | null;
}
interface Status {
  runId: string;
  teamKey: string;
  phase: "fetching" | "applying" | "linking" | "done" | "failed";
  done: number;
  total: number;
  counts: Record<string, number> | null;
  error: string | null;
  lastImportAt: string | null;
}

type ImportFlags = OrgFlags & { team?: string; project?: string; "new-project"?: string; "poll-ms"?: string };

const PHASE_WORDS: Record<Status["phase"], string> = {
  fetching: "reading from Linear",
  applying: "writing issues",
  linking: "linking parents and relations",
  done: "done",
  failed: "failed",
};

async function linearKey(): Promise<string> {
  const key = process.env.RETASC_IMPORT_TOKEN?.trim() || (await readStdinSecret());
  if (!key) {
    throw new CliError(
      "INVALID_INPUT",
      "no Linear API key: set RETASC_IMPORT_TOKEN or pipe it on standard input",
      "retasc import linear --team ENG --new-project Engineering < linear-key.txt",
    );
  }
  return key;
}

export async function importLinear(flags: ImportFlags, positionals: string[]) {
  if (positionals[0] !== "linear") throw new CliError("INVALID_INPUT", `retasc import takes linear, not ${positionals[0] ?? "nothing"}`, "retasc import linear --team ENG --new-project Engineering");
  if (flags.project && flags["new-project"]) throw new CliError("INVALID_INPUT", "pass --project or --new-project, not both", "retasc import linear --team ENG --new-project Engineering");
  const pollMs = Number(flags["poll-ms"] ?? 1000);
  if (!Number.isInteger(pollMs) || pollMs < 50) throw new CliError("INVALID_INPUT", "--poll-ms takes a whole number of milliseconds, at least 50", "retasc import linear --team ENG --poll-ms 1000");
  const apiKey = await linearKey();
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const teams = await asSession<Team[]>(session, "/import/linear", { body: { orgId, action: "teams", apiKey } });
  const wanted = flags.team?.trim();
  const team = wanted ? teams.find((t) => t.key.toLowerCase() === wanted.toLowerCase() || t.id === wanted) : undefined;
  if (!team) {
    if (flags.json && !wanted) return printJson({ teams });
    if (!flags.json) {
      out(table(["KEY", "NAME", "ISSUES", "LAST IMPORT", "ID"], teams.map((t) => [t.key, t.name, t.issueCount, t.lastImportAt ?? "never", t.id])));
    }
    throw new CliError(
      wanted ? "NOT_FOUND" : "INVALID_INPUT",
      wanted ? `the key sees no Linear team ${wanted}` : "pick a team with --team <KEY>",
      `retasc import linear --team ${teams[0]?.key ?? "ENG"} --new-project ${JSON.stringify(teams[0]?.name ?? "Engineering")}`,
    );
  }
  if (!flags.project && !flags["new-project"]) {
    throw new CliError("INVALID_INPUT", "name the project: --new-project <name>, or --project <PREFIX> of an earlier import of this team", `retasc import linear --team ${team.key} --new-project ${JSON.stringify(team.name)}`);
  }
  if (team.lastImportAt) note(`${team.key} was imported on ${team.lastImportAt}: fields edited in Retasc since are overwritten by Linear's.`);
  const projectId = flags.project ? await projectIdOf(session, orgId, flags.project) : undefined;
  const started = await asSession<{ runId: string; total: number }>(session, "/import/linear", {
    body: { orgId, action: "start", apiKey, teamId: team.id, ...(projectId ? { projectId } : { newProject: { name: flags["new-project"] } }) },
  });
  const status = await follow(session, orgId, started.runId, pollMs, Boolean(flags.json));
  if (status.phase === "failed") throw new CliError("UNAVAILABLE", `the import of ${team.key} failed: ${status.error ?? "no reason given"}`, "Run the same command again: a re-import reconciles, it never duplicates.");
  if (flags.json) return printJson(status);
  ok(`Imported ${team.key}: ${Object.entries(status.counts ?? {}).map(([k, v]) => `${v} ${k}`).join(", ") || `${status.total} issues`}.`);
  say(`Run ${status.runId}. Issues keep their identifiers (${team.key}-1 and on).`);
}

/** A project of the org by its prefix (or id). */
async function projectIdOf(session: SignedIn, orgId: string, wanted: string): Promise<string> {
  const { projects } = await asSession<{ projects: { id: string; prefix: string }[] }>(session, "/projects", { query: { orgId } });
  const project = projects.find((p) => p.prefix.toLowerCase() === wanted.toLowerCase() || p.id === wanted);
  if (!project) throw new CliError("NOT_FOUND", `no project ${wanted} in this org`, "retasc import linear --team ENG --new-project Engineering");
  return project.id;
}

/** Polls the run until it ends, drawing `phase  done/total` on stderr (on a terminal, in place). */
async function follow(session: SignedIn, orgId: string, runId: string, pollMs: number, quiet: boolean): Promise<Status> {
  const tty = process.stderr.isTTY && !quiet;
  let last = "";
  for (;;) {
    const status = await asSession<Status>(session, "/import/linear", { query: { orgId, runId } });
    const line = `${PHASE_WORDS[status.phase]}  ${bar(status.done, status.total)} ${status.done}/${status.total}`;
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
