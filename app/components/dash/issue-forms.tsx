import { Form } from "react-router";
import type { IssueDetail } from "../../../server/dash/issue.ts";
import { IssueLink, StatusBadge, focusRing } from "./bits.tsx";
import { ChangeTypeSelect } from "./change-type.tsx";
import { PRIORITIES, priorityName } from "./format.ts";
import { danger, input, primary, secondary } from "./issue.tsx";
import "./dash.css";

/** The issue page's forms, each posting one intent to the page's action: edit, reprioritize, relate, cancel, release, settle verification, release from quarantine. */

type Detail = IssueDetail;

export function EditForm({ detail }: { detail: Detail }) {
  const issue = detail.issue;
  const values = {
    title: issue.title ?? "",
    body: issue.body ?? "",
    status: issue.status,
    assignee: issue.assignee?.email ?? "",
    dueAt: issue.dueAt ? issue.dueAt.slice(0, 10) : "",
    labels: issue.labels.join(", "),
    changeType: issue.changeType ?? "",
  };
  const terminal = issue.status === "done" || issue.status === "canceled";
  const statuses = [...new Set([issue.status, "todo", "doing", "blocked"])];
  return (
    <Form method="post" className="flex flex-col gap-3" aria-label="Edit issue">
      {Object.entries(values).map(([k, v]) => (
        <input key={k} type="hidden" name={`was.${k}`} value={v} />
      ))}
      <div className="flex flex-col gap-1">
        <label htmlFor="edit-title" className="text-sm font-medium">Title</label>
        <input id="edit-title" name="title" defaultValue={values.title} required maxLength={500} className={input} />
      </div>
      <div className="flex flex-col gap-1">
        <label htmlFor="edit-body" className="text-sm font-medium">Description (Markdown)</label>
        <textarea id="edit-body" name="body" defaultValue={values.body} rows={6} className={`${input} font-mono`} />
      </div>
      <div className="grid gap-3 sm:grid-cols-2">
        <div className="flex flex-col gap-1">
          <label htmlFor="edit-status" className="text-sm font-medium">Status</label>
          <select id="edit-status" name="status" defaultValue={values.status} disabled={terminal} className={input} aria-describedby="edit-status-hint">
            {statuses.map((s) => (
              <option key={s} value={s}>{s}</option>
            ))}
          </select>
          <p id="edit-status-hint" className="text-xs text-stone-500">
            Done and review are set by the agent holding the claim; a status change never frees a lease.
          </p>
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor="edit-assignee" className="text-sm font-medium">Lane (assignee)</label>
          <select id="edit-assignee" name="assignee" defaultValue={values.assignee} className={input}>
            <option value="">unassigned</option>
            {detail.members.map((m) => (
              <option key={m.userId} value={m.email}>{m.name ? `${m.name} (${m.email})` : m.email}</option>
            ))}
          </select>
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor="edit-due" className="text-sm font-medium">Due date</label>
          <input id="edit-due" name="dueAt" type="date" defaultValue={values.dueAt} className={input} aria-describedby="edit-due-hint" />
          <p id="edit-due-hint" className="text-xs text-stone-500">End of that day in the org's time zone; clear it to remove.</p>
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor="edit-labels" className="text-sm font-medium">Labels</label>
          <input id="edit-labels" name="labels" defaultValue={values.labels} placeholder="bug, backend" className={input} />
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor="edit-change-type" className="text-sm font-medium">Kind of change</label>
          <ChangeTypeSelect id="edit-change-type" defaultValue={values.changeType} className={input} unsaid={values.changeType === ""} />
        </div>
      </div>
      <div>
        <button type="submit" name="intent" value="edit" className={primary}>Save changes</button>
      </div>
    </Form>
  );
}

export function PriorityForm({ detail }: { detail: Detail }) {
  return (
    <Form method="post" className="flex flex-wrap items-end gap-2" aria-label="Reprioritize">
      <div className="flex flex-col gap-1">
        <label htmlFor="priority" className="text-sm font-medium">Priority</label>
        <select id="priority" name="priority" defaultValue={String(detail.issue.priority)} className={input}>
          {PRIORITIES.map((p) => (
            <option key={p.value} value={p.value}>{p.label}</option>
          ))}
        </select>
      </div>
      <button type="submit" name="intent" value="reprioritize" className={secondary}>Reprioritize</button>
      <p className="w-full text-xs text-stone-500">Now {priorityName(detail.issue.priority)}; what it blocks re-ranks at once.</p>
    </Form>
  );
}

/** `prefix`: the issue's own, for the example in the field. */
export function RelateForm({ prefix }: { prefix: string }) {
  return (
    <Form method="post" className="flex flex-wrap items-end gap-2" aria-label="Add a relation">
      <div className="flex flex-col gap-1">
        <label htmlFor="relation-type" className="text-sm font-medium">Relation</label>
        <select id="relation-type" name="type" defaultValue="blocked_by" className={input}>
          <option value="blocked_by">is blocked by</option>
          <option value="blocks">blocks</option>
          <option value="related">is related to</option>
          <option value="duplicate">duplicates</option>
        </select>
      </div>
      <div className="flex flex-col gap-1">
        <label htmlFor="relation-other" className="text-sm font-medium">Issue</label>
        <input id="relation-other" name="other" required placeholder={`${prefix}-…`} className={`${input} w-32 font-mono`} />
      </div>
      <button type="submit" name="intent" value="relate" className={secondary}>Add relation</button>
    </Form>
  );
}

export function RelationList({ detail }: { detail: Detail }) {
  const issue = detail.issue;
  const groups: { label: string; type: string; items: { identifier: string; status?: string }[]; asSource: boolean }[] = [
    { label: "Blocked by", type: "blocked_by", items: issue.blockedBy, asSource: true },
    { label: "Blocks", type: "blocks", items: issue.blocks, asSource: true },
    { label: "Related", type: "related", items: issue.related.map((identifier) => ({ identifier })), asSource: true },
    { label: "Duplicates", type: "duplicate", items: issue.duplicates.map((identifier) => ({ identifier })), asSource: true },
  ];
  return (
    <dl className="grid grid-cols-[7rem_1fr] gap-x-3 gap-y-2 text-sm">
      {groups.map((g) => (
        <div key={g.type} className="contents">
          <dt className="text-stone-600">{g.label}</dt>
          <dd className="flex flex-wrap gap-2">
            {g.items.length === 0 && !(g.type === "blocked_by" && issue.blockedOutsideScope) ? <span className="text-stone-500">none</span> : null}
            {g.type === "blocked_by" && issue.blockedOutsideScope ? <span className="text-stone-700">{issue.blockedOutsideScope}</span> : null}
            {g.items.map((item) => (
              <Form key={item.identifier} method="post" className="inline-flex items-center gap-1 rounded border border-stone-200 bg-white px-1.5 py-0.5">
                <IssueLink identifier={item.identifier} />
                {item.status ? <StatusBadge status={item.status} /> : null}
                <input type="hidden" name="type" value={g.type} />
                <input type="hidden" name="other" value={item.identifier} />
                <button type="submit" name="intent" value="unrelate" aria-label={`Remove ${g.label.toLowerCase()} ${item.identifier}`} className={`px-1 text-stone-500 hover:text-red-800 ${focusRing}`}>
                  ×
                </button>
              </Form>
            ))}
          </dd>
        </div>
      ))}
    </dl>
  );
}

export function CancelForm() {
  return (
    <Form method="post" className="flex flex-col gap-2" aria-label="Cancel issue">
      <label htmlFor="cancel-reason" className="text-sm font-medium">Reason for canceling</label>
      <input id="cancel-reason" name="reason" required maxLength={2000} className={input} />
      <div>
        <button type="submit" name="intent" value="cancel" className={danger}>Cancel issue</button>
      </div>
    </Form>
  );
}

export function ReleaseForm() {
  return (
    <Form method="post" className="flex flex-col gap-2" aria-label="Release stuck claim">
      <label htmlFor="release-reason" className="text-sm font-medium">Why take the claim back</label>
      <input id="release-reason" name="reason" required maxLength={2000} placeholder="agent hung waiting for input" className={input} />
      <div>
        <button type="submit" name="intent" value="release" className={danger}>Release claim</button>
      </div>
      <p className="text-xs text-stone-500">The holder's next heartbeat or finish is refused; its checkpoint stays for the next agent.</p>
    </Form>
  );
}
/** A person passes or fails a finish CI has not settled; recorded as theirs. */
export function VerifyByHandForm() {
  return (
    <Form method="post" className="flex flex-col gap-2" aria-label="Settle verification by hand">
      <label htmlFor="verify-note" className="text-sm font-medium">Settle CI's verification by hand</label>
      <input id="verify-note" name="note" maxLength={500} placeholder="checked on staging" className={input} />
      <div className="flex gap-2">
        <button type="submit" name="intent" value="verify-passed" className={secondary}>Pass it</button>
        <button type="submit" name="intent" value="verify-failed" className={danger}>Fail it</button>
      </div>
      <p className="text-xs text-stone-500">Passing starts what waits on it; failing puts it back in the queue at High. Your name is recorded.</p>
    </Form>
  );
}

interface Quarantine {
  reason: string | null;
  since: string;
  claims: { fence: number; runtime: string; ended: string | null; notes: string[] }[];
}

/** Why agents no longer get this issue (decision 055): the reason, what each abandoning agent wrote, and the person's release. */
export function QuarantineBox({ quarantine }: { quarantine: Quarantine }) {
  return (
    <section id="quarantine" aria-labelledby="quarantine-heading" className="flex flex-col gap-3 rounded border border-amber-300 bg-amber-50 p-4">
      <h2 id="quarantine-heading" className="text-base font-semibold">Blocked: {quarantine.reason ?? "quarantined"}</h2>
      <p className="text-sm">Agents kept abandoning it, so none is handed it until a person releases it. What they wrote:</p>
      <ul className="flex flex-col gap-1 text-sm">
        {quarantine.claims.map((claim) => (
          <li key={claim.fence}>
            <span className="font-medium">
              Claim {claim.fence} ({claim.runtime}, {claim.ended === "expired" ? "lapsed" : (claim.ended ?? "ended")})
            </span>
            {claim.notes.length ? `: ${claim.notes.join(" · ")}` : ": no note"}
          </li>
        ))}
      </ul>
      <Form method="post">
        <button type="submit" name="intent" value="unquarantine" className={secondary}>Release it to agents</button>
      </Form>
    </section>
  );
}
