import { redirect } from "react-router";
import type { Route } from "./+types/dash.settings.import";
import { requireMember } from "../auth.server.ts";
import { attempt } from "../errors.server.ts";
import { readForm } from "../forms.server.ts";
import { claimGhost, dryRunLinearImport, linearImportStatus, listGhosts, listLinearTeams, startLinearImport } from "../../server/transfer/linear/index.ts";
import { dryRunJiraImport, startJiraImport } from "../../server/transfer/jira/index.ts";
import { dryRunAsanaImport, startAsanaImport } from "../../server/transfer/asana/index.ts";
import { dryRunShortcutImport, startShortcutImport } from "../../server/transfer/shortcut/index.ts";
import { dryRunClickUpImport, startClickUpImport } from "../../server/transfer/clickup/index.ts";
import { dryRunCsvImport, previewCsvImport, startCsvImport } from "../../server/transfer/csv/index.ts";
import { listProjects } from "../../server/orgs/projects.ts";
import { importAgain } from "../../server/transfer/again.ts";
import { forgetImportCredential, listKeptCredentials } from "../../server/transfer/pipeline/kept-credentials.ts";
import { Card, ErrorNote, Notice } from "../components/ui.tsx";
import { ImportProgress } from "../components/dash/import-progress.tsx";
import { ImportGhosts } from "../components/dash/import-ghosts.tsx";
import { ImportKept } from "../components/dash/import-kept.tsx";
import { LinearKeyForm } from "../components/dash/import-linear-form.tsx";
import { JiraImportForm } from "../components/dash/import-jira-form.tsx";
import { alternativeOf, TOKEN_SOURCES, TokenImportForm, type TokenSource } from "../components/dash/import-token-form.tsx";
import { CsvImportForm, type CsvPreview } from "../components/dash/import-csv-form.tsx";
import { ImportDryRun, type DryRunReport } from "../components/dash/import-dry-run.tsx";
import { carriedMapping, ImportMapping, mappingOf } from "../components/dash/import-mapping.tsx";
import "../components/dash/dash.css";

const sources = { linear: "Linear", jira: "Jira", asana: "Asana", shortcut: "Shortcut", clickup: "ClickUp", csv: "a CSV file" } as const;
type Source = keyof typeof sources;
/** The sources of one token and one choice (../components/dash/import-token-form.tsx), by their services. */
const tokenImports = {
  asana: { dryRun: dryRunAsanaImport, start: startAsanaImport },
  shortcut: { dryRun: dryRunShortcutImport, start: startShortcutImport },
  clickup: { dryRun: dryRunClickUpImport, start: startClickUpImport },
} satisfies Record<TokenSource, unknown>;
const isTokenSource = (s: Source): s is TokenSource => Object.hasOwn(TOKEN_SOURCES, s);
const sourceOf = (value: string | null): Source => (value && Object.hasOwn(sources, value) ? (value as Source) : "linear");

export function meta({ location }: Route.MetaArgs) {
  return [{ title: `Import from ${sources[sourceOf(new URLSearchParams(location.search).get("source"))]} · Retasc` }];
}

/** The run is named in the URL (`?run=`), so a reload without JS shows its progress; the key never is. */
export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx, membership } = await requireMember(request, context);
  const manages = membership.role !== "member";
  const runId = new URL(request.url).searchParams.get("run");
  const [status, ghosts, projects, kept] = await Promise.all([
    runId && manages ? attempt(context.log, () => linearImportStatus(ctx, { runId })) : null,
    listGhosts(ctx),
    manages ? listProjects(ctx, {}).then((r) => r.projects.map((p) => ({ id: p.id, prefix: p.prefix, name: p.name }))) : [],
    manages ? listKeptCredentials(ctx) : [],
  ]);
  const source = sourceOf(new URL(request.url).searchParams.get("source"));
  return { manages, source, status: status?.ok ? status.value : null, statusError: status && !status.ok ? status.error : null, ghosts, projects, kept };
}

/**
 * `teams`: the teams the pasted key sees; `dry-run`: what the import would do; `start`: the
 * import (a Linear re-import only once its warning is confirmed); `claim`: "That's me". Every
 * source's dry run and start take the status and priority mapping the form carries (the dry
 * run's selects). The key is read from the form and passed on, never returned, logged or put in
 * a URL; the services check the role.
 */
export async function action({ request, context }: Route.ActionArgs) {
  const { ctx } = await requireMember(request, context);
  const form = await readForm(request);
  const text = (name: string) => String(form.get(name) ?? "").trim();
  const intent = text("intent");
  const apiKey = text("apiKey");
  const source = sourceOf(text("source"));
  const target = text("target");
  const mapping = mappingOf(form);
  const keepCredential = form.get("keepCredential") === "on";
  // What the form had, given back so a step keeps it (never a credential).
  const values = Object.fromEntries([...form].filter(([k, v]) => typeof v === "string" && !["apiToken", "apiKey", "accessToken", "csv", "intent"].includes(k)).map(([k, v]) => [k, String(v)]));
  const result = await attempt(context.log, async () => {
    if (intent === "claim") {
      await claimGhost(ctx, { ghostId: text("ghostId") });
      return { notice: "Claimed: that history is yours now." };
    }
    const ref = { source: text("source") as "linear", sourceId: text("sourceId") };
    if (intent === "again") return { runId: (await importAgain(ctx, ref)).runId };
    if (intent === "forget") {
      await forgetImportCredential(ctx, ref);
      return { notice: "Forgotten: the credential is no longer kept." };
    }
    if (source === "jira") {
      const input = { site: text("site"), email: text("email"), apiToken: text("apiToken"), projectKey: text("projectKey"), mapping };
      if (intent === "dry-run") return { values, dryRun: await dryRunJiraImport(ctx, input) };
      const into = target && target !== "new" ? { projectId: target } : { newProject: { name: text("projectName") || input.projectKey.toUpperCase() } };
      return { runId: (await startJiraImport(ctx, { ...input, ...into, keepCredential })).runId };
    }
    if (isTokenSource(source)) {
      const { token, what } = TOKEN_SOURCES[source];
      const or = alternativeOf(source);
      // Each service parses its own input (zod): the form's fields go to it by their names (an empty alternative as none).
      const input = { [token.name]: text(token.name), [what.name]: text(what.name), ...(or ? { [or.name]: text(or.name) } : {}), mapping } as never;
      if (intent === "dry-run") return { values, dryRun: await tokenImports[source].dryRun(ctx, input) };
      const into = target && target !== "new" ? { projectId: target } : { newProject: { name: text("projectName"), prefix: text("prefix") } };
      return { runId: (await tokenImports[source].start(ctx, { ...(input as object), ...into, keepCredential } as never)).runId };
    }
    if (source === "csv") {
      const file = form.get("file");
      const csv = file && typeof file !== "string" ? await file.text() : text("csv");
      const preview = await previewCsvImport(ctx, { csv });
      if (intent === "preview") return { values: { ...values, name: file && typeof file !== "string" ? file.name : "" }, csv, preview };
      const columns = Object.fromEntries([...form].filter(([k, v]) => k.startsWith("column.") && v).map(([k, v]) => [k.slice("column.".length), String(v)]));
      const input = { csv, name: text("name"), mapping: { columns, ...mapping } } as Parameters<typeof startCsvImport>[1];
      if (intent === "dry-run") return { values, csv, preview, dryRun: await dryRunCsvImport(ctx, input) };
      const into = target && target !== "new" ? { projectId: target } : { newProject: { name: text("projectName") || input.name, prefix: text("prefix") } };
      return { runId: (await startCsvImport(ctx, { ...input, ...into })).runId };
    }
    const teams = await listLinearTeams(ctx, { apiKey });
    if (intent !== "start" && intent !== "dry-run") return { teams };
    const teamId = text("teamId");
    if (intent === "dry-run") return { teams, values, dryRun: await dryRunLinearImport(ctx, { apiKey, teamId, mapping }) };
    const team = teams.find((t) => t.id === teamId);
    if (team?.lastImportAt && form.get("confirm") !== "on") return { teams, values, confirm: { teamId, lastImportAt: team.lastImportAt } };
    const started = await startLinearImport(ctx, {
      apiKey,
      teamId,
      mapping,
      keepCredential,
      ...(target && target !== "new" ? { projectId: target } : { newProject: { name: text("projectName") || team?.name || "" } }),
    });
    return { runId: started.runId };
  });
  if (result.ok && "runId" in result.value) throw redirect(`/dash/settings/import?run=${encodeURIComponent(String(result.value.runId))}${source === "linear" ? "" : `&source=${source}`}`);
  return result.ok ? { ...result.value, error: null } : { error: result.error, values, ...(source === "csv" && text("csv") ? await attempt(context.log, () => previewCsvImport(ctx, { csv: text("csv") })).then((p) => (p.ok ? { csv: text("csv"), preview: p.value } : {})) : {}) };
}

export default function TrackerImport({ loaderData, actionData }: Route.ComponentProps) {
  const { manages, source, status, statusError, ghosts, projects, kept } = loaderData;
  const values = (actionData && "values" in actionData ? actionData.values : undefined) ?? {};
  const dryRun = actionData && "dryRun" in actionData ? (actionData.dryRun as DryRunReport) : null;
  const preview = actionData && "preview" in actionData ? (actionData.preview as CsvPreview) : null;
  const csv = actionData && "csv" in actionData ? (actionData.csv as string) : null;
  const teams = actionData && "teams" in actionData ? (actionData.teams ?? null) : null;
  const confirm = actionData && "confirm" in actionData ? (actionData.confirm ?? null) : null;
  // A step that answered without a dry run (a refusal, the re-import warning) draws the mapping it was sent again, so it is not lost.
  const carried = dryRun ? null : carriedMapping(values);
  return (
    <div className="flex flex-col gap-6">
      <h1 className="text-2xl font-semibold">{`Import from ${sources[source]}`}</h1>
      <nav aria-label="Import from" className="flex gap-3 text-sm">
        {(Object.keys(sources) as Source[]).map((s) => (
          <a key={s} href={`/dash/settings/import?source=${s}`} aria-current={s === source ? "page" : undefined} className={s === source ? "font-semibold underline" : "underline"}>
            {s === "csv" ? "CSV" : sources[s]}
          </a>
        ))}
      </nav>
      <p className="text-sm text-muted">
        <a className="underline" href="/dash/settings/transfer">
          Import &amp; export
        </a>{" "}
        ·{" "}
        {source === "linear"
          ? "A Linear team's issues, sub-issues, relations, comments, labels and attachments, with their identifiers and times."
          : source === "jira"
            ? "A Jira project's issues, sub-tasks and epics, links, comments, labels and components, with their keys and times."
            : isTokenSource(source)
              ? TOKEN_SOURCES[source].about
              : "Any export (Trello, GitHub Projects, a spreadsheet) as issues, with the columns you pick."}
      </p>
      <ErrorNote error={actionData?.error ?? statusError} />
      {actionData && "notice" in actionData ? <Notice>{actionData.notice}</Notice> : null}
      {manages ? (
        <>
          {status ? <ImportProgress status={status} from={sources[sourceOf(status.source)]} /> : null}
          {!status || status.phase === "done" || status.phase === "failed" ? (
            <>
              {dryRun ? <ImportDryRun report={dryRun} /> : null}
              {carried && carried.statuses.length + carried.priorities.length > 0 ? (
                <Card title="Mapping">
                  <div className="flex flex-col gap-3 text-sm">
                    <ImportMapping statuses={carried.statuses} priorities={carried.priorities} />
                  </div>
                </Card>
              ) : null}
              <Card title={isTokenSource(source) ? TOKEN_SOURCES[source].title : source === "linear" ? "Import a team" : source === "csv" ? "Import a file" : "Import a project"}>
                {source === "linear" ? <LinearKeyForm teams={teams} projects={projects} confirm={confirm} values={values} /> : null}
                {source === "jira" ? <JiraImportForm projects={projects} values={values} /> : null}
                {isTokenSource(source) ? <TokenImportForm source={source} projects={projects} values={values} /> : null}
                {source === "csv" ? <CsvImportForm projects={projects} preview={preview} csv={csv} values={values} /> : null}
              </Card>
            </>
          ) : null}
        </>
      ) : (
        <Notice>{`Owners and admins import from ${sources[source]}.`}</Notice>
      )}
      {manages ? <ImportKept kept={kept} from={sources} /> : null}
      <ImportGhosts ghosts={ghosts} />
    </div>
  );
}
