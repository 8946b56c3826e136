import { redirect } from "react-router";
import type { Route } from "./+types/dash.settings.import";
import { requireMember } from "../auth.server.ts";
import { attempt } from "../errors.server.ts";
import { readForm } from "../forms.server.ts";
import { claimGhost, linearImportStatus, listGhosts, listLinearTeams, startLinearImport } from "../../server/transfer/linear/index.ts";
import { listProjects } from "../../server/orgs/projects.ts";
import { Card, ErrorNote, Notice } from "../components/ui.tsx";
import { ImportProgress } from "../components/dash/import-progress.tsx";
import { ImportGhosts } from "../components/dash/import-ghosts.tsx";
import { LinearKeyForm } from "../components/dash/import-linear-form.tsx";
import "../components/dash/dash.css";

export function meta() {
  return [{ title: "Import from Linear · Retasc" }];
}

/** The run is named in the URL (`?run=`), so a reload without JS shows its progress; the key never is. */
export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx, membership } = await requireMember(request, context);
  const manages = membership.role !== "member";
  const runId = new URL(request.url).searchParams.get("run");
  const [status, ghosts, projects] = await Promise.all([
    runId && manages ? attempt(context.log, () => linearImportStatus(ctx, { runId })) : null,
    listGhosts(ctx),
    manages ? listProjects(ctx, {}).then((r) => r.projects.map((p) => ({ id: p.id, prefix: p.prefix, name: p.name }))) : [],
  ]);
  return { manages, status: status?.ok ? status.value : null, statusError: status && !status.ok ? status.error : null, ghosts, projects };
}

/**
 * `teams`: the teams the pasted key sees; `start`: the import (a re-import only once its
 * warning is confirmed); `claim`: "That's me". The key is read from the form and passed on,
 * never returned, logged or put in a URL; the services check the role.
 */
export async function action({ request, context }: Route.ActionArgs) {
  const { ctx } = await requireMember(request, context);
  const form = await readForm(request);
  const text = (name: string) => String(form.get(name) ?? "").trim();
  const intent = text("intent");
  const apiKey = text("apiKey");
  const result = await attempt(context.log, async () => {
    if (intent === "claim") {
      await claimGhost(ctx, { ghostId: text("ghostId") });
      return { claimed: "Claimed: that history is yours now." };
    }
    const teams = await listLinearTeams(ctx, { apiKey });
    if (intent !== "start") return { teams };
    const teamId = text("teamId");
    const team = teams.find((t) => t.id === teamId);
    if (team?.lastImportAt && form.get("confirm") !== "on") return { teams, confirm: { teamId, lastImportAt: team.lastImportAt } };
    const target = text("target");
    const started = await startLinearImport(ctx, {
      apiKey,
      teamId,
      ...(target && target !== "new" ? { projectId: target } : { newProject: { name: text("projectName") || team?.name || "" } }),
    });
    return { runId: started.runId };
  });
  if (result.ok && "runId" in result.value) throw redirect(`/dash/settings/import?run=${encodeURIComponent(String(result.value.runId))}`);
  return result.ok ? { ...result.value, error: null } : { error: result.error };
}

export default function LinearImport({ loaderData, actionData }: Route.ComponentProps) {
  const { manages, status, statusError, ghosts, projects } = loaderData;
  const teams = actionData && "teams" in actionData ? (actionData.teams ?? null) : null;
  const confirm = actionData && "confirm" in actionData ? (actionData.confirm ?? null) : null;
  return (
    <div className="flex flex-col gap-6">
      <h1 className="text-2xl font-semibold">Import from Linear</h1>
      <p className="text-sm text-muted">
        <a className="underline" href="/dash/settings/transfer">
          Import &amp; export
        </a>{" "}
        · A Linear team's issues, sub-issues, relations, comments, labels and attachments, with their identifiers and times.
      </p>
      <ErrorNote error={actionData?.error ?? statusError} />
      {actionData && "claimed" in actionData ? <Notice>{actionData.claimed}</Notice> : null}
      {manages ? (
        <>
          {status ? <ImportProgress status={status} /> : null}
          {!status || status.phase === "done" || status.phase === "failed" ? (
            <Card title="Import a team">
              <LinearKeyForm teams={teams} projects={projects} confirm={confirm} />
            </Card>
          ) : null}
        </>
      ) : (
        <Notice>Owners and admins import from Linear.</Notice>
      )}
      <ImportGhosts ghosts={ghosts} />
    </div>
  );
}
