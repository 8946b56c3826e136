import { Form, Link, redirect, useNavigation } from "react-router";
import type { Route } from "./+types/dash.issues.new";
import { requireMember } from "../auth.server.ts";
import { attempt } from "../errors.server.ts";
import { createIssueInput } from "../../server/dash/forms.ts";
import { newIssueOptions } from "../../server/dash/issue.ts";
import { saveIssue } from "../../server/issues/index.ts";
import { ErrorNote } from "../components/ui.tsx";
import { focusRing, linkClass } from "../components/dash/bits.tsx";
import { ChangeTypeSelect } from "../components/dash/change-type.tsx";
import { PRIORITIES } from "../components/dash/format.ts";
import { readForm } from "../forms.server.ts";

export function meta() {
  return [{ title: "New issue · Retasc" }];
}

export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx } = await requireMember(request, context);
  return newIssueOptions(ctx);
}

/** Creates the issue with save_issue, so a person declares exactly what an agent must: work or container, and dependencies. */
export async function action({ request, context }: Route.ActionArgs) {
  const { ctx } = await requireMember(request, context);
  const form = await readForm(request);
  const result = await attempt(context.log, () => saveIssue(ctx, createIssueInput(form)));
  if (result.ok) throw redirect(`/dash/issues/${result.value.identifier}`);
  return { error: result.error };
}

const input = `w-full rounded border border-stone-300 bg-white px-2 py-1.5 text-sm ${focusRing}`;

/** Typing in a dependency field picks its choice, so the radio never disagrees with what was written. */
const choose = (value: string) => (event: React.FormEvent<HTMLInputElement>) => {
  const radio = event.currentTarget.form?.querySelector<HTMLInputElement>(`input[name="dependency"][value="${value}"]`);
  if (radio) radio.checked = true;
};

export default function NewIssue({ loaderData, actionData }: Route.ComponentProps) {
  const { projects, members } = loaderData;
  const prefix = projects[0]?.prefix ?? "WEB";
  const example = `${prefix}-4, ${prefix}-7`;
  const busy = useNavigation().state === "submitting";
  if (projects.length === 0) {
    return (
      <div className="flex flex-col gap-3">
        <h1 className="text-2xl font-semibold">New issue</h1>
        <p>
          Issues live in a project. <Link to="/dash/settings/projects" className={linkClass}>Create a project</Link> first.
        </p>
      </div>
    );
  }
  return (
    <div className="flex max-w-2xl flex-col gap-6">
      <h1 className="text-2xl font-semibold">New issue</h1>
      <ErrorNote error={actionData?.error} />
      <Form method="post" className="flex flex-col gap-5" aria-label="New issue">
        <div className="grid gap-4 sm:grid-cols-[10rem_1fr]">
          <div className="flex flex-col gap-1">
            <label htmlFor="new-project" className="text-sm font-medium">Project</label>
            <select id="new-project" name="project" className={input} defaultValue={projects[0]!.prefix}>
              {projects.map((p) => (
                <option key={p.id} value={p.prefix}>{p.prefix} · {p.name}</option>
              ))}
            </select>
          </div>
          <div className="flex flex-col gap-1">
            <label htmlFor="new-title" className="text-sm font-medium">Title</label>
            <input id="new-title" name="title" required maxLength={500} className={input} />
          </div>
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor="new-body" className="text-sm font-medium">Description (Markdown)</label>
          <textarea id="new-body" name="body" rows={6} className={`${input} font-mono`} />
        </div>

        <fieldset className="flex flex-col gap-2">
          <legend className="text-sm font-medium">Kind</legend>
          <label className="inline-flex items-center gap-2 text-sm">
            <input type="radio" name="work" value="work" required defaultChecked className={focusRing} /> Work: a unit an agent executes
          </label>
          <label className="inline-flex items-center gap-2 text-sm">
            <input type="radio" name="work" value="container" className={focusRing} /> Container: tracks other issues, never dispatched
          </label>
        </fieldset>

        <fieldset className="flex flex-col gap-2" aria-describedby="dependency-hint">
          <legend className="text-sm font-medium">Dependencies</legend>
          <p id="dependency-hint" className="text-xs text-stone-600">
            Every issue declares what it waits on, or why it waits on nothing. Blocked work is never handed out.
          </p>
          <div className="flex flex-col gap-1">
            <label className="inline-flex items-center gap-2 text-sm">
              <input type="radio" name="dependency" value="blockedBy" required className={focusRing} /> Blocked by
            </label>
            <label htmlFor="new-blocked-by" className="sr-only">Blocking issues</label>
            <input
              id="new-blocked-by"
              name="blockedBy"
              placeholder={`identifiers, e.g. ${example}`}
              onInput={choose("blockedBy")}
              className={`${input} ml-6 w-auto max-w-[calc(100%-1.5rem)] font-mono`}
            />
          </div>
          <div className="flex flex-col gap-1">
            <label className="inline-flex items-center gap-2 text-sm">
              <input type="radio" name="dependency" value="none" defaultChecked className={focusRing} /> No dependency, because
            </label>
            <label htmlFor="new-no-dependency" className="sr-only">Why it depends on nothing</label>
            <input
              id="new-no-dependency"
              name="noDependency"
              maxLength={500}
              defaultValue="stands alone"
              onInput={choose("none")}
              className={`${input} ml-6 w-auto max-w-[calc(100%-1.5rem)]`}
            />
          </div>
        </fieldset>

        <div className="grid gap-4 sm:grid-cols-2">
          <div className="flex flex-col gap-1">
            <label htmlFor="new-priority" className="text-sm font-medium">Priority</label>
            <select id="new-priority" name="priority" defaultValue="0" className={input}>
              {PRIORITIES.map((p) => (
                <option key={p.value} value={p.value}>{p.label}</option>
              ))}
            </select>
          </div>
          <div className="flex flex-col gap-1">
            <label htmlFor="new-change-type" className="text-sm font-medium">Kind of change</label>
            <ChangeTypeSelect id="new-change-type" defaultValue="" className={input} />
          </div>
          <div className="flex flex-col gap-1">
            <label htmlFor="new-assignee" className="text-sm font-medium">Lane (assignee)</label>
            <select id="new-assignee" name="assignee" defaultValue="" className={input}>
              <option value="">unassigned</option>
              {members.map((m) => (
                <option key={m.userId} value={m.email}>{m.name ? `${m.name} (${m.email})` : m.email}</option>
              ))}
            </select>
          </div>
          <div className="flex flex-col gap-1">
            <label htmlFor="new-due" className="text-sm font-medium">Due date</label>
            <input id="new-due" name="dueAt" type="date" className={input} />
          </div>
          <div className="flex flex-col gap-1">
            <label htmlFor="new-labels" className="text-sm font-medium">Labels</label>
            <input id="new-labels" name="labels" placeholder="bug, backend" className={input} />
          </div>
          <div className="flex flex-col gap-1">
            <label htmlFor="new-parent" className="text-sm font-medium">Parent container</label>
            <input id="new-parent" name="parent" placeholder={`a container, e.g. ${prefix}-1`} className={`${input} font-mono`} />
          </div>
          <label className="inline-flex items-center gap-2 self-end text-sm">
            <input type="checkbox" name="startBlocked" className={focusRing} /> Flag as blocked on something external
          </label>
        </div>
        <div>
          <button type="submit" disabled={busy} className={`rounded bg-stone-900 px-4 py-2 text-sm font-medium text-white hover:bg-stone-700 disabled:opacity-60 ${focusRing}`}>
            {busy ? "Creating…" : "Create issue"}
          </button>
        </div>
      </Form>
    </div>
  );
}
