import { Form } from "react-router";
import type { Route } from "./+types/dash.settings.projects";
import { requireMember } from "../auth.server.ts";
import { attempt } from "../errors.server.ts";
import { addProject } from "../../server/orgs/account.ts";
import { listProjects } from "../../server/orgs/projects.ts";
import { renameProjectPrefix } from "../../server/orgs/rename-prefix.ts";
import { listVerificationSettings, setVerification } from "../../server/verification/settings.ts";
import { Button, Card, EmptyState, ErrorNote, Field, Notice } from "../components/ui.tsx";
import "../components/dash/dash.css";

const head = "px-2 py-2 font-medium text-muted";
const cell = "px-2 py-2 align-top";
import { readForm } from "../forms.server.ts";

export function meta() {
  return [{ title: "Projects · Retasc" }];
}

export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx, membership } = await requireMember(request, context);
  const [{ projects }, verification] = await Promise.all([listProjects(ctx, {}), listVerificationSettings(ctx)]);
  return { projects, verification, canCreate: membership.role !== "member" };
}

export async function action({ request, context }: Route.ActionArgs) {
  const { ctx } = await requireMember(request, context);
  const form = await readForm(request);
  if (form.get("intent") === "verification") {
    const set = await attempt(context.log, () =>
      setVerification(ctx, {
        projectId: String(form.get("projectId") ?? ""),
        mode: form.get("mode") === "ci" ? "ci" : "off",
        checks: String(form.get("checks") ?? ""),
        windowMinutes: String(form.get("windowMinutes") ?? "120"),
        stallMinutes: String(form.get("stallMinutes") ?? "45"),
        quarantineAfter: String(form.get("quarantineAfter") ?? "3"),
        releaseStalled: form.get("releaseStalled") === "on",
      }),
    );
    return set.ok ? { created: null, verified: set.value.prefix, error: null } : { created: null, verified: null, error: set.error };
  }
  if (form.get("intent") === "rename-prefix") {
    const renamed = await attempt(context.log, () =>
      renameProjectPrefix(ctx, { project: String(form.get("projectId") ?? ""), prefix: String(form.get("prefix") ?? "") }),
    );
    return renamed.ok
      ? { created: null, verified: null, renamed: `${renamed.value.previous} is now ${renamed.value.prefix}`, error: null }
      : { created: null, verified: null, renameError: renamed.error, error: null };
  }
  const result = await attempt(context.log, () =>
    addProject(ctx, { name: String(form.get("name") ?? ""), prefix: String(form.get("prefix") ?? "") }),
  );
  return result.ok ? { created: result.value.prefix, verified: null, error: null } : { created: null, verified: null, error: result.error };
}

export default function Projects({ loaderData, actionData }: Route.ComponentProps) {
  const { projects, verification, canCreate } = loaderData;
  return (
    <div className="flex flex-col gap-6">
      <h1 className="text-2xl font-semibold">Projects</h1>
      {projects.length === 0 ? (
        <EmptyState title="No projects yet.">
          A project holds issues named by its prefix (WEB-1, WEB-2, …) and the agent keys that work on them. Create the first one below.
        </EmptyState>
      ) : (
        <table className="stack-md w-full border-collapse text-left text-sm">
          <caption className="sr-only">Projects of this org</caption>
          <thead>
            <tr className="border-b border-line-strong">
              <th scope="col" className={head}>Prefix</th>
              <th scope="col" className={head}>Name</th>
              <th scope="col" className={head}>Issues so far</th>
              <th scope="col" className={head}>Id</th>
            </tr>
          </thead>
          <tbody>
            {projects.map((p) => (
              <tr key={p.id} className="border-b border-line max-md:py-2">
                <td className={`${cell} font-mono`} data-label="Prefix">{p.prefix}</td>
                <td className={cell} data-label="Name">{p.name}</td>
                <td className={`${cell} tabular-nums`} data-label="Issues so far">{p.issueCounter}</td>
                <td className={`${cell} font-mono text-xs text-muted`} data-label="Id">{p.id}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {canCreate && projects.length > 0 ? (
        <Card title="Verification">
          <p className="text-sm text-stone-600">
            With CI on, a finish needs the commit or request it delivered, and nothing waiting on it starts until CI passes it (through the project's
            connector, or a CI key with <code>retasc verify</code>). A red run puts it back in the queue at High with the failing checks as gotchas.
            A claim kept alive with no checkpoint, comment or status write for the stall window is marked stalled; a project may have it released instead,
            as its holder's release would (it counts towards quarantine).
          </p>
          {actionData?.verified ? <Notice>Saved {actionData.verified}'s verification.</Notice> : null}
          {projects.map((p) => {
            const v = verification.find((s) => s.projectId === p.id);
            return (
              <Form method="post" key={p.id} className="mt-3 flex flex-wrap items-end gap-3" aria-label={`Verification of ${p.prefix}`}>
                <input type="hidden" name="intent" value="verification" />
                <input type="hidden" name="projectId" value={p.id} />
                <span className="font-mono text-sm">{p.prefix}</span>
                <label className="flex flex-col text-sm">
                  Mode
                  <select name="mode" defaultValue={v?.mode ?? "off"} className="rounded border border-stone-300 px-2 py-1.5">
                    <option value="off">off: done on the agent's word</option>
                    <option value="ci">ci: CI passes it first</option>
                  </select>
                </label>
                <label className="flex flex-col text-sm">
                  Required checks
                  <input name="checks" defaultValue={(v?.checks ?? []).join(",")} placeholder="test,lint (empty: every check)" maxLength={2000} className="rounded border border-stone-300 px-2 py-1.5" />
                </label>
                <label className="flex flex-col text-sm">
                  Stale after (minutes)
                  <input name="windowMinutes" type="number" min={1} defaultValue={String(v?.windowMinutes ?? 120)} className="w-28 rounded border border-stone-300 px-2 py-1.5" />
                </label>
                <label className="flex flex-col text-sm">
                  Claim stalled after (minutes)
                  <input name="stallMinutes" type="number" min={1} defaultValue={String(v?.stallMinutes ?? 45)} className="w-28 rounded border border-stone-300 px-2 py-1.5" />
                </label>
                <label className="flex flex-col text-sm">
                  Quarantine after (abandoned claims)
                  <input name="quarantineAfter" type="number" min={1} max={100} defaultValue={String(v?.quarantineAfter ?? 3)} className="w-28 rounded border border-stone-300 px-2 py-1.5" />
                </label>
                <label className="flex items-center gap-2 self-center text-sm" title="Off: a stalled claim is only marked on the Fleet and in the issue's activity">
                  <input name="releaseStalled" type="checkbox" defaultChecked={v?.releaseStalled ?? false} />
                  Release stalled claims
                </label>
                <Button>Save</Button>
              </Form>
            );
          })}
        </Card>
      ) : null}
      {canCreate && projects.length > 0 ? (
        <Card title="Rename a prefix">
          <p className="text-sm text-stone-600">
            Every issue of the project is renamed at once (WEB-42 becomes APP-42). The old prefix stays the project's: WEB-42 keeps naming the same
            issue in links, agents' calls, the CLI and mentions, and no other project may take it. Branches already handed out keep their names.
          </p>
          <ErrorNote error={actionData && "renameError" in actionData ? actionData.renameError : null} />
          {actionData && "renamed" in actionData && actionData.renamed ? <Notice>Renamed: {actionData.renamed}.</Notice> : null}
          <Form method="post" className="mt-3 flex flex-wrap items-end gap-3" aria-label="Rename a project's prefix">
            <input type="hidden" name="intent" value="rename-prefix" />
            <label className="flex flex-col text-sm">
              Project
              <select name="projectId" className="rounded border border-stone-300 px-2 py-1.5">
                {projects.map((p) => (
                  <option key={p.id} value={p.id}>
                    {p.prefix} · {p.name}
                  </option>
                ))}
              </select>
            </label>
            <label className="flex flex-col text-sm">
              New prefix
              <input name="prefix" required minLength={2} maxLength={10} pattern="[A-Za-z][A-Za-z0-9]{1,9}" placeholder="APP" className="rounded border border-stone-300 px-2 py-1.5 font-mono" />
            </label>
            <Button>Rename</Button>
          </Form>
        </Card>
      ) : null}
      {canCreate ? (
        <Card title="New project">
          <Form method="post" className="flex flex-col gap-4">
            <ErrorNote error={actionData?.error} />
            {actionData?.created ? <Notice>Created project {actionData.created}.</Notice> : null}
            <Field label="Name" name="name" required placeholder="Web" />
            <Field
              label="Prefix"
              name="prefix"
              required
              placeholder="WEB"
              hint="2–10 letters or digits, starting with a letter. Issues are named PREFIX-1, PREFIX-2, …"
            />
            <div>
              <Button>Create project</Button>
            </div>
          </Form>
        </Card>
      ) : (
        <p className="text-sm text-stone-600">Owners and admins create projects.</p>
      )}
    </div>
  );
}
