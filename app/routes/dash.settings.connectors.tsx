import { Form } from "react-router";
import type { Route } from "./+types/dash.settings.connectors";
import { requireMember } from "../auth.server.ts";
import { attempt } from "../errors.server.ts";
import { readForm } from "../forms.server.ts";
import { listConnectors, revokeConnector, setConnectorReviewer } from "../../server/intake/connectors.ts";
import { createConnector } from "../../server/intake/create.ts";
import { findPeople, peopleNamed } from "../../server/orgs/members.ts";
import { pickerQuery } from "../../server/orgs/people-pickers.ts";
import { listProjects } from "../../server/orgs/projects.ts";
import { Button, Card, EmptyState, ErrorNote, Field, Notice, SecretBox, Select } from "../components/ui.tsx";
import { stamp } from "../components/dash/format.ts";
import { PersonSearch, personLabel } from "../components/dash/person-search.tsx";
import "../components/dash/dash.css";

export function meta() {
  return [{ title: "Connectors · Retasc" }];
}

export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx, membership } = await requireMember(request, context);
  const q = pickerQuery(new URL(request.url).searchParams.get("q"));
  // The reviewer menus offer one page of people matching `q` (the search finds anyone else), and each card's reviewer wherever they sort.
  const [{ connectors }, { projects }, found] = await Promise.all([listConnectors(ctx, {}), listProjects(ctx, {}), findPeople(ctx, { q })]);
  const reviewers = await peopleNamed(ctx, connectors.flatMap((c) => (c.reviewer ? [c.reviewer] : [])));
  return { connectors, projects, members: found.people, more: found.nextCursor !== undefined, q, reviewers, manages: membership.role !== "member" };
}

/** Connect (owners and admins; the service checks the role), pick a reviewer, and revoke. The secret is in this one answer only. */
export async function action({ request, context }: Route.ActionArgs) {
  const { ctx } = await requireMember(request, context);
  const form = await readForm(request);
  const text = (name: string) => String(form.get(name) ?? "").trim() || undefined;
  const result = await attempt(context.log, async () => {
    switch (text("intent")) {
      case "connect": {
        const kind = text("provider");
        const created = await createConnector(ctx, {
          provider: kind === "github" ? "github" : "gitlab",
          repo: text("repo") ?? "",
          project: text("project") ?? "",
          ...(kind === "gitlab-self-hosted" && text("baseUrl") ? { baseUrl: text("baseUrl") } : {}),
          ...(text("token") ? { token: text("token") } : {}),
          triageAll: form.get("triageAll") === "on",
          ...(form.get("pullRequests") === "on" ? { pullRequests: true, reviewer: text("reviewer") } : {}),
        });
        return { created: { webhookUrl: created.webhookUrl, secret: created.secret, steps: created.steps } };
      }
      case "reviewer":
        await setConnectorReviewer(ctx, { connectorId: text("connectorId") ?? "", reviewer: text("reviewer") ?? "" });
        return { done: "Reviewer set: the next review items go to their lane." };
      case "revoke":
        await revokeConnector(ctx, { connectorId: text("connectorId") ?? "" });
        return { done: "Connector revoked: its webhooks are refused from now on." };
      default:
        return {};
    }
  });
  return result.ok ? { ...result.value, error: null } : { error: result.error };
}

const providerLabel = { github: "GitHub", gitlab: "GitLab" } as const;

export default function Connectors({ loaderData, actionData }: Route.ComponentProps) {
  const { connectors, projects, members, more, q, reviewers, manages } = loaderData;
  const created = actionData && "created" in actionData ? actionData.created : null;
  return (
    <div className="flex flex-col gap-8">
      <h1 className="text-2xl font-semibold">Connectors</h1>
      <p className="text-sm text-stone-700">
        A connected GitHub or GitLab repository files its issues into a project; when one is done here, the source issue is closed (with a
        write-back token). Issues from people outside the team wait for a member to accept them.
      </p>
      <ErrorNote error={actionData?.error} />
      {actionData && "done" in actionData && actionData.done ? <Notice>{actionData.done}</Notice> : null}
      {created ? (
        <section className="flex flex-col gap-3" data-testid="new-connector" aria-label="The new connector's webhook">
          <Notice>Copy the secret now: this is the only time it is shown.</Notice>
          <SecretBox label="Webhook URL" value={created.webhookUrl} />
          <SecretBox label="Secret" value={created.secret} />
          <ol className="list-decimal pl-6 text-sm">
            {created.steps.map((step) => (
              <li key={step}>{step}</li>
            ))}
          </ol>
        </section>
      ) : null}
      {manages ? (
        <Form method="get" className="flex flex-wrap items-end gap-3" aria-label="Find a reviewer">
          <PersonSearch q={q} shown={members.length} more={more} />
          <Button tone="secondary">Search</Button>
        </Form>
      ) : null}
      {connectors.length === 0 ? (
        <EmptyState title="No connectors yet.">Connect a repository below, or run <code>retasc connector add</code>.</EmptyState>
      ) : (
        <div className="grid gap-4 md:grid-cols-2">
          {connectors.map((c) => (
            <section key={c.id} aria-label={`${providerLabel[c.provider]} ${c.repo}`} className="rounded-lg border border-stone-200 bg-white p-4 text-sm shadow-sm" data-connector={c.id}>
              <h2 className="font-semibold">
                {providerLabel[c.provider]} {c.repo} → {c.project}
              </h2>
              <p data-testid="connector-status">
                {c.status === "revoked" ? "Revoked" : c.connection === "connected" ? "Connected" : "Pending: waiting for the first delivery"}
              </p>
              <p className="text-muted">Last delivery: {c.lastDeliveryAt ? stamp(c.lastDeliveryAt) : "none yet"}</p>
              {c.lastError ? <p className="text-red-800" role="status">Last error: {c.lastError}{c.lastErrorAt ? ` (${stamp(c.lastErrorAt)})` : ""}</p> : null}
              <p className="text-muted">
                {c.tokenOnFile ? "Closes source issues (token on file)." : "No write-back token."} {c.triageAll ? "Every issue goes straight to the queue." : "Outsiders' issues await triage."}
              </p>
              {c.pullRequests ? <p className="text-muted">{`Outsiders' ${c.provider === "github" ? "pull" : "merge"} requests go to ${c.reviewer} for review.`}</p> : null}
              {manages && c.status !== "revoked" && c.reviewer !== null ? (
                <Form method="post" className="mt-2 flex flex-wrap items-end gap-2" aria-label={`Reviewer for ${c.repo}`}>
                  <input type="hidden" name="connectorId" value={c.id} />
                  <label className="flex flex-col gap-1">
                    <span className="font-medium">Reviewer</span>
                    <select name="reviewer" defaultValue={c.reviewer} className="rounded border border-stone-300 bg-white px-2 py-1.5">
                      <ReviewerOption reviewer={c.reviewer} active={reviewers.find((r) => r.email === c.reviewer)} />
                      {members.flatMap((m) =>
                        m.email === c.reviewer ? [] : [
                          <option key={m.email} value={m.email}>
                            {personLabel(m)}
                          </option>,
                        ],
                      )}
                    </select>
                  </label>
                  <Button name="intent" value="reviewer">
                    Set reviewer
                  </Button>
                </Form>
              ) : null}
              {manages && c.status !== "revoked" ? (
                <Form method="post" className="mt-2">
                  <input type="hidden" name="connectorId" value={c.id} />
                  <Button name="intent" value="revoke" tone="danger" aria-label={`Revoke ${c.repo}`}>
                    Revoke
                  </Button>
                </Form>
              ) : null}
            </section>
          ))}
        </div>
      )}
      {manages && projects.length > 0 ? (
        <Card title="Connect a repository">
          <Form method="post" className="flex flex-col gap-4">
            <Select
              label="Provider"
              name="provider"
              options={[
                { value: "github", label: "GitHub" },
                { value: "gitlab", label: "GitLab" },
                { value: "gitlab-self-hosted", label: "GitLab (self-hosted)" },
              ]}
            />
            <Field label="Repository" name="repo" required placeholder="owner/name" hint="owner/name on GitHub, the project path on GitLab" />
            <Field label="Base URL" name="baseUrl" placeholder="https://gitlab.example.com" hint="Only for a self-hosted GitLab" />
            <Select label="Project" name="project" options={projects.map((p) => ({ value: p.prefix, label: `${p.prefix} · ${p.name}` }))} />
            <Field label="Write-back token (optional)" name="token" type="password" autoComplete="off" hint="Kept encrypted, never shown again; lets Retasc close the source issue" />
            <label className="flex items-center gap-2 text-sm">
              <input type="checkbox" name="triageAll" /> Let every author's issues through without triage
            </label>
            <label className="flex items-center gap-2 text-sm">
              <input type="checkbox" name="pullRequests" /> Outsiders' pull/merge requests become review items
            </label>
            <Select label="Reviewer" name="reviewer" options={[{ value: "", label: "(pick the member who reviews them)" }, ...members.map((m) => ({ value: m.email, label: personLabel(m) }))]} />
            <div>
              <Button name="intent" value="connect">
                Connect
              </Button>
            </div>
          </Form>
        </Card>
      ) : null}
      {!manages ? <p className="text-sm text-muted">Owners and admins connect and revoke repositories.</p> : null}
    </div>
  );
}

/** A card's reviewer, first in its menu whether or not the search shows them. */
function ReviewerOption({ reviewer, active }: { reviewer: string; active: { name: string; email: string } | undefined }) {
  return <option value={reviewer}>{active ? personLabel(active) : `${reviewer} (no longer a member)`}</option>;
}
