import { Form, Link } from "react-router";
import type { AgentView, PersonView } from "../../../server/orgs/members.ts";
import { Button, Card, EmptyState } from "../ui.tsx";
import { stamp } from "./format.ts";
import "./dash.css";

/** The members page's panels (app/routes/dash.settings.members.tsx): its people, its agents, and the links that page them. */

/** Who is looking: what they may change on a row depends on their role and whether the row is theirs. */
export interface Viewer {
  memberId: string;
  userId: string;
  role: string;
}

export type ProjectChoice = { id: string; prefix: string; name: string };

export const head = "px-2 py-2 font-medium text-muted";
export const row = "border-b border-line max-md:py-2";
export const cell = "px-2 py-2 align-top";
export const actions = "px-2 py-1.5 text-right align-top whitespace-nowrap [&>form+form]:ml-2";

function Action({ intent, memberId, label, tone = "secondary" }: { intent: string; memberId: string; label: string; tone?: "secondary" | "danger" }) {
  return (
    <Form method="post" className="inline">
      <input type="hidden" name="memberId" value={memberId} />
      <Button name="intent" value={intent} tone={tone}>
        {label}
      </Button>
    </Form>
  );
}

/** Ticks for the projects a scope names; none ticked means every project. */
export function ProjectTicks({ projects, checked }: { projects: ProjectChoice[]; checked: string[] | null }) {
  return (
    <fieldset className="flex flex-wrap gap-x-4 gap-y-1 text-sm">
      <legend className="mb-1 font-medium">Projects (none ticked: all)</legend>
      {projects.map((p) => (
        <label key={p.id} className="inline-flex items-center gap-1">
          <input type="checkbox" name="projectIds" value={p.id} defaultChecked={checked?.includes(p.id) ?? false} />
          <span className="font-mono">{p.prefix}</span> {p.name}
        </label>
      ))}
    </fieldset>
  );
}

/** The org's people, each with the forms the viewer may use on them. */
export function PeopleTable({ people, projects, me, manages }: { people: PersonView[]; projects: ProjectChoice[]; me: Viewer; manages: boolean }) {
  const prefixOf = new Map(projects.map((p) => [p.id, p.prefix]));
  return (
    <Card title="People">
      <table className="stack-md w-full border-collapse text-left text-sm">
        <thead>
          <tr className="border-b border-stone-300">
            <th scope="col" className={head}>Name</th>
            <th scope="col" className={head}>Email</th>
            <th scope="col" className={head}>Role</th>
            <th scope="col" className={head}>State</th>
            <th scope="col" className={head}>Projects</th>
            <th scope="col"><span className="sr-only">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          {people.map((p) => (
            <tr key={p.memberId} className={row} data-member={p.email}>
              <td className={cell} data-label="Name">{p.name}</td>
              <td className={cell} data-label="Email">{p.email}</td>
              <td className={cell} data-label="Role">{p.role}</td>
              <td className={cell} data-label="State">{p.status}</td>
              <td className={cell} data-label="Projects">
                {p.projectIds ? p.projectIds.map((id) => prefixOf.get(id) ?? id).join(", ") : "all"}
                {/* Only members are scoped; an admin scopes members, an owner anyone below (server/orgs/scope.ts). */}
                {manages && p.role === "member" && p.memberId !== me.memberId ? (
                  <details className="mt-1">
                    <summary className="cursor-pointer text-xs text-muted">Change</summary>
                    <Form method="post" className="mt-2 flex flex-col items-start gap-2">
                      <input type="hidden" name="memberId" value={p.memberId} />
                      <ProjectTicks projects={projects} checked={p.projectIds} />
                      <Button name="intent" value="scope">
                        Set projects
                      </Button>
                    </Form>
                  </details>
                ) : null}
              </td>
              <td className={actions}>
                {manages && p.memberId !== me.memberId ? (
                  p.status === "active" ? (
                    <Action intent="suspend" memberId={p.memberId} label="Suspend" tone="danger" />
                  ) : (
                    <Action intent="reactivate" memberId={p.memberId} label="Reactivate" />
                  )
                ) : null}
                {me.role === "owner" && p.memberId !== me.memberId ? (
                  p.role === "member" ? (
                    <Action intent="make-admin" memberId={p.memberId} label="Make admin" />
                  ) : p.role === "admin" ? (
                    <Action intent="make-member" memberId={p.memberId} label="Make member" />
                  ) : null
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </Card>
  );
}

/** The org's live agents; an agent's person retires it, and so do owners and admins. */
export function AgentTable({ agents, me, manages }: { agents: AgentView[]; me: Viewer; manages: boolean }) {
  return (
    <Card title="Agents">
      {agents.length === 0 ? (
        <EmptyState title="No live agents.">
          Bind a folder with <code>retasc bind</code>, or mint a key on the Keys page: each agent key shows here.
        </EmptyState>
      ) : (
        <table className="stack-md w-full border-collapse text-left text-sm">
          <thead>
            <tr className="border-b border-stone-300">
              <th scope="col" className={head}>Runtime</th>
              <th scope="col" className={head}>Key</th>
              <th scope="col" className={head}>Acts for</th>
              <th scope="col" className={head}>Project</th>
              <th scope="col" className={head}>Last used</th>
              <th scope="col"><span className="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {agents.map((a) => (
              <tr key={a.memberId} className={row}>
                <td className={`${cell} font-mono`} data-label="Runtime">{a.runtime}</td>
                <td className={`${cell} font-mono`} data-label="Key">{a.keyPrefix}…</td>
                <td className={cell} data-label="Acts for">{a.humanEmail}</td>
                <td className={cell} data-label="Project">{a.projectPrefix ?? "any"}</td>
                <td className={`${cell} tabular-nums`} data-label="Last used">{a.lastUsedAt ? stamp(a.lastUsedAt) : "never"}</td>
                <td className={actions}>
                  {manages || a.userId === me.userId ? (
                    <Action intent="retire" memberId={a.memberId} label="Retire" tone="danger" />
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  );
}

/** Plain links, so a list pages without JavaScript. */
export function Pages({ label, first, next, nextLabel = "Next page" }: { label: string; first: string | null; next: string | null; nextLabel?: string }) {
  if (!first && !next) return null;
  return (
    <nav aria-label={label} className="mt-4 flex gap-4 text-sm">
      {first ? <Link className="underline" to={first}>First page</Link> : null}
      {next ? <Link className="underline" to={next}>{nextLabel}</Link> : null}
    </nav>
  );
}
