import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { projects } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { invalidInput, notFound } from "../errors.ts";
import { actorOf, requireRole } from "../orgs/access.ts";
import { prefixSchema, projectNamedBy } from "../orgs/index.ts";
import { dryRunAsanaImport, listAsanaProjects, startAsanaImport } from "./asana/index.ts";
import { dryRunClickUpImport, listClickUpLocations, startClickUpImport } from "./clickup/index.ts";
import { dryRunCsvImport, previewCsvImport, startCsvImport } from "./csv/index.ts";
import { CSV_MAX_BYTES } from "./csv/read.ts";
import { dryRunJiraImport, listJiraProjects, startJiraImport } from "./jira/index.ts";
import { dryRunLinearImport, listLinearTeams, startLinearImport } from "./linear/index.ts";
import { sourceMappingInput } from "./pipeline/start.ts";
import { importSourceNames } from "./pipeline/stream.ts";
import { EPIC_SOURCE_PREFIX, epicSourceId } from "./shortcut/epic.ts";
import { dryRunShortcutImport, listShortcutEpics, listShortcutTeams, startShortcutImport } from "./shortcut/index.ts";

/**
 * One door onto every import source for an agent over MCP (`list_import_sources` and
 * `run_import`): the same services the Dash's Import page and `retasc import` call, reached with
 * one flat argument set (`token`, Jira's `site` and `email`, `target`, `project`; a CSV's text as
 * `csv`), each mapped here to the names its service takes. The credential goes to the service for
 * this call and is stored nowhere (decision 047). A CSV is held to the size the Dash's upload and
 * the CLI endpoint take (`REQUEST_MAX_BODY_BYTES`), so no door takes a larger file than another.
 */
export type ImportSourceName = (typeof importSourceNames)[number];
/** run_import's sources: the trackers read with a credential, and a CSV's text. */
export const runImportSources = [...importSourceNames, "csv"] as const;
type RunSource = (typeof runImportSources)[number];

interface Source {
  name: string;
  /** What `token` is and where a person makes one. */
  token: string;
  /** The arguments the source needs. */
  needs: ("token" | "site" | "email" | "csv")[];
  /** What `target` names. */
  target: string;
  /** The source's key is the project's prefix (ENG-12 stays ENG-12), so it imports into the project with that prefix. */
  keyed: boolean;
}

const sources: Record<RunSource, Source> = {
  linear: { name: "Linear", token: "a personal API key (Linear: Settings, Security & access)", needs: ["token"], target: "a team's id", keyed: true },
  jira: {
    name: "Jira",
    token: "Jira Cloud: an API token (id.atlassian.com, Security) with email; Data Center: a personal access token",
    needs: ["token", "site", "email"],
    target: "a project's key",
    keyed: true,
  },
  asana: { name: "Asana", token: "a personal access token (Asana: Settings, Apps, Developer apps)", needs: ["token"], target: "a project's gid or URL", keyed: false },
  shortcut: { name: "Shortcut", token: "an API token (Shortcut: Settings, API Tokens)", needs: ["token"], target: "a team's id, name or mention name; or epic:<an epic's id or name> for one epic's stories", keyed: false },
  clickup: { name: "ClickUp", token: "a personal API token, pk_… (ClickUp: Settings, Apps)", needs: ["token"], target: "a List's or Space's URL, list:<id> or space:<id>", keyed: false },
  csv: {
    name: "a CSV file",
    token: "none: pass the file's text as csv. Without target: its columns, first rows and the mapping guessed from its header (mapping.columns: our field to its column: id, title, body, status, priority, dueDate, labels, assignee, author, createdAt, updatedAt, parent, blockedBy); mapping.statuses and priorities map its cells",
    needs: ["csv"],
    target: "the file's name: imported again under the same name, it reconciles",
    keyed: false,
  },
};

/** The sources an owner or admin can import from, and what each needs from the person. */
export async function listImportSources(ctx: Ctx) {
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing");
  return {
    sources: runImportSources.map((source) => {
      const { name, token, needs, target } = sources[source];
      const cap = source === "csv" ? ` (at most ${csvCap(ctx)} bytes)` : "";
      return { source: `${source} (${name})`, needs: needs.join(", "), token: `${token}${cap}`, target };
    }),
  };
}

export const runImportInput = z.object({
  source: z.enum(runImportSources),
  // What each source's token and target are, and which take site, email or csv, list_import_sources says; run_import's
  // description says what target and project do (every token of tools/list counts).
  // Required of every source but a CSV, which runImport says (a minLength would cost tools/list tokens).
  token: z.string().trim().max(1000).optional(),
  site: z.string().trim().max(500).optional(),
  email: z.string().trim().max(320).optional(),
  csv: z.string().max(CSV_MAX_BYTES).optional(),
  target: z.string().trim().max(500).optional(),
  project: prefixSchema.optional(),
  // A CSV's columns (our field to its column) ride in the mapping, checked by the CSV's own schema (csvMappingInput).
  mapping: sourceMappingInput.unwrap().extend({ columns: z.record(z.string(), z.unknown()).optional() }).optional(),
  dryRun: z.boolean().default(true),
});
export type RunImportInput = z.input<typeof runImportInput>;

/** What the token sees at the source, as `target` values, each with when it was last imported into this org. */
async function targets(ctx: Ctx, source: ImportSourceName, input: { token: string; site?: string; email?: string }) {
  const seen = (id: string, name: string, issueCount: number, lastImportAt: string | null) => ({ target: id, name, issueCount, lastImportAt });
  switch (source) {
    case "linear":
      return (await listLinearTeams(ctx, { apiKey: input.token })).map((t) => seen(t.id, `${t.key} ${t.name}`, t.issueCount, t.lastImportAt));
    case "jira":
      return (await listJiraProjects(ctx, jiraCredentials(input))).map((p) => seen(p.key, p.name, p.issueCount, p.lastImportAt));
    case "asana":
      return (await listAsanaProjects(ctx, { accessToken: input.token })).map((p) => seen(p.id, `${p.name} (${p.workspace})`, p.issueCount, p.lastImportAt));
    case "shortcut":
      return [
        ...(await listShortcutTeams(ctx, { apiToken: input.token })).map((t) => seen(t.id, t.name, t.issueCount, t.lastImportAt)),
        ...(await listShortcutEpics(ctx, { apiToken: input.token })).map((e) => seen(epicSourceId(Number(e.id)), `epic ${e.name}`, e.issueCount, e.lastImportAt)),
      ];
    case "clickup":
      return (await listClickUpLocations(ctx, { apiToken: input.token })).map((l) => seen(l.location, `${l.kind} ${l.name} (${l.workspace})`, l.issueCount, l.lastImportAt));
  }
}

const jiraCredentials = (input: { site?: string | undefined; email?: string | undefined; token: string }) => {
  if (!input.site) throw invalidInput("site is required for Jira", "Pass the Jira site's URL, like https://your-team.atlassian.net.");
  return { site: input.site, apiToken: input.token, ...(input.email ? { email: input.email } : {}) };
};

/**
 * The project a run goes into, as the services take it: an existing project by id, or a new one.
 * A prefix names a project by its current prefix or one it had before a rename (`projectNamedBy`,
 * decision 089), so a project renamed since its last import is found by either; `project` in the
 * answer is its prefix now.
 */
async function destination(ctx: Ctx, source: RunSource, prefix: string | undefined, key: string | null, name: string) {
  const want = key ?? prefix;
  if (!want) {
    const [own] = ctx.principal.projectId ? await ctx.db.select({ prefix: projects.prefix }).from(projects).where(eq(projects.id, ctx.principal.projectId)) : [];
    if (own) return { into: { projectId: ctx.principal.projectId! }, project: own.prefix };
    throw invalidInput("project is required: your key is not scoped to a project", "Pass the prefix of a project to import into (list_projects), or a new one's.");
  }
  const named = async (p: string) => (await ctx.db.select({ id: projects.id, prefix: projects.prefix }).from(projects).where(and(eq(projects.orgId, ctx.principal.orgId), projectNamedBy(ctx.principal.orgId, p))).limit(1))[0];
  const found = await named(want);
  // A keyed source's project may be passed by its prefix now when the key is one it had (ENG renamed CORE).
  if (key && prefix && prefix !== key && (!found || (await named(prefix))?.id !== found.id)) {
    throw invalidInput(`project: ${sources[source].name} imports into the project whose prefix is its key ${key}, so ${key}-12 stays ${key}-12`, `Leave project out, or pass ${key}.`);
  }
  return { into: found ? { projectId: found.id } : { newProject: { name, prefix: want } }, project: found?.prefix ?? want };
}

/**
 * Without a target: what the token sees. With one: the dry run (counts, the status and priority
 * mapping, people to be ghosted, what stays behind), or with `dryRun: false` the run itself, whose
 * id `latestImport` and `importStatus` follow. Owners and admins (each service checks the role).
 */
export async function runImport(ctx: Ctx, raw: RunImportInput) {
  const input = runImportInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], `importing from ${sources[input.source].name}`);
  if (input.source === "csv") return runCsvImport(ctx, input);
  const { source, token, target } = input;
  if (!token) throw invalidInput("token is required", `list_import_sources says what ${sources[source].name}'s token is and where to make one.`);
  const mapping = input.mapping && { statuses: input.mapping.statuses, priorities: input.mapping.priorities };
  if (!target) return { targets: await targets(ctx, source, { ...input, token }) };
  switch (source) {
    case "linear": {
      if (input.dryRun) return dryRunLinearImport(ctx, { apiKey: token, teamId: target, mapping });
      const team = (await listLinearTeams(ctx, { apiKey: token })).find((t) => t.id === target);
      if (!team) throw notFound(`Linear team ${target}`, "Leave target out to list the teams this key sees.");
      const { into, project } = await destination(ctx, source, input.project, team.key.toUpperCase(), team.name);
      return started(await startLinearImport(ctx, { apiKey: token, teamId: target, mapping, ...into }), project);
    }
    case "jira": {
      const credentials = { ...jiraCredentials({ ...input, token }), projectKey: target, mapping };
      if (input.dryRun) return dryRunJiraImport(ctx, credentials);
      const key = target.toUpperCase();
      const { into, project } = await destination(ctx, source, input.project, key, key);
      return started(await startJiraImport(ctx, { ...credentials, ...into }), project);
    }
    case "asana": {
      const args = { accessToken: token, projectGid: target, mapping };
      if (input.dryRun) return dryRunAsanaImport(ctx, args);
      const { into, project } = await destination(ctx, source, input.project, null, "");
      return started(await startAsanaImport(ctx, { ...args, ...into }), project);
    }
    case "shortcut": {
      // epic:<id or name> is one epic (what a run of an epic is named, so importing it again finds it); anything else a team.
      const epic = target.startsWith(EPIC_SOURCE_PREFIX) ? target.slice(EPIC_SOURCE_PREFIX.length) : undefined;
      const args = { apiToken: token, ...(epic === undefined ? { team: target } : { epic }), mapping };
      if (input.dryRun) return dryRunShortcutImport(ctx, args);
      const { into, project } = await destination(ctx, source, input.project, null, "");
      return started(await startShortcutImport(ctx, { ...args, ...into }), project);
    }
    case "clickup": {
      const args = { apiToken: token, location: target, mapping };
      if (input.dryRun) return dryRunClickUpImport(ctx, args);
      const { into, project } = await destination(ctx, source, input.project, null, "");
      return started(await startClickUpImport(ctx, { ...args, ...into }), project);
    }
  }
}

/** A run begun: its id (latestImport follows it), the issues the source counts, and the project's prefix. */
const started = (run: { runId: string; total: number }, project: string) => ({ dryRun: false as const, runId: run.runId, total: run.total, project });

/** The largest CSV the Dash's upload and the CLI endpoint take (their request body cap), and so run_import. */
const csvCap = (ctx: Ctx) => Math.min(ctx.config.REQUEST_MAX_BODY_BYTES, CSV_MAX_BYTES);

/**
 * A CSV's text: without a target its preview (columns, first rows, the mapping guessed from its
 * header); with one (the file's name, which a later run reconciles on) the dry run, with the
 * preview beside it naming the mapping used (the guessed columns where `mapping.columns` is left
 * out); with `dryRun: false` the run.
 */
async function runCsvImport(ctx: Ctx, input: z.output<typeof runImportInput>) {
  const { csv, target, mapping } = input;
  if (!csv) throw invalidInput("csv is required: the file's text", "Pass the CSV's text as csv, its header row first.");
  const cap = csvCap(ctx);
  if (Buffer.byteLength(csv) > cap) throw invalidInput(`csv: the file is larger than ${cap} bytes, the most an upload of a CSV may be here`, "Split the file and import it in parts under the same target; each part reconciles with the last.");
  const preview = await previewCsvImport(ctx, { csv });
  if (!target) return { preview };
  const used = { ...preview.mapping, ...(mapping?.columns ? { columns: mapping.columns } : {}), ...(mapping?.statuses ? { statuses: mapping.statuses } : {}), ...(mapping?.priorities ? { priorities: mapping.priorities } : {}) };
  const args = { csv, name: target, mapping: used as Parameters<typeof dryRunCsvImport>[1]["mapping"] };
  if (input.dryRun) return { ...(await dryRunCsvImport(ctx, args)), preview: { ...preview, mapping: used } };
  const { into, project } = await destination(ctx, "csv", input.project, null, target.slice(0, 100));
  return started(await startCsvImport(ctx, { ...args, ...into }), project);
}
