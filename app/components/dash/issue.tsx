import { Form, Link, useNavigation } from "react-router";
import type { IssueDetail } from "../../../server/dash/issue.ts";
import { IssueLink, StatusBadge, focusRing } from "./bits.tsx";
import { ChangeTypeSelect } from "./change-type.tsx";
import "./dash.css";
import { PRIORITIES, ago, countdown, priorityName, renewedByText, stamp } from "./format.ts";

/** Sections of the issue drill-down. */

type Detail = IssueDetail;
const input = `w-full rounded border border-stone-300 bg-white px-2 py-1.5 text-sm ${focusRing}`;
const button = `rounded px-3 py-1.5 text-sm font-medium ${focusRing}`;
const primary = `${button} bg-stone-900 text-white hover:bg-stone-700 disabled:opacity-60`;
const secondary = `${button} border border-stone-300 bg-white hover:bg-stone-100`;
const danger = `${button} border border-red-300 bg-white text-red-800 hover:bg-red-50`;

export function Section({ title, id, children }: { title: string; id: string; children: React.ReactNode }) {
  return (
    <section aria-labelledby={id} className="flex flex-col gap-3">
      <h2 id={id} className="text-lg font-semibold">
        {title}
      </h2>
      {children}
    </section>
  );
}

/** The body as rendered on the server, safe by construction (server/markdown). */
export function MarkdownBody({ html }: { html: string }) {
  if (!html) return <p className="text-stone-500">No description.</p>;
  return <Markdown html={html} testId="issue-body" />;
}

function Markdown({ html, testId, className = "" }: { html: string; testId: string; className?: string }) {
  return (
    <div
      className={`${className} max-w-none text-stone-800 [&_a]:text-sky-800 [&_a]:underline [&_blockquote]:border-l-4 [&_blockquote]:border-stone-300 [&_blockquote]:pl-3 [&_code]:rounded [&_code]:bg-stone-100 [&_code]:px-1 [&_code]:font-mono [&_code]:text-[0.9em] [&_h1]:text-xl [&_h1]:font-semibold [&_h2]:text-lg [&_h2]:font-semibold [&_h3]:font-semibold [&_li]:my-0.5 [&_ol]:list-decimal [&_ol]:pl-6 [&_pre]:whitespace-pre-wrap [&_pre]:[overflow-wrap:anywhere] [&_pre]:rounded [&_pre]:bg-stone-900 [&_pre]:p-3 [&_pre]:text-stone-100 [&_pre_code]:bg-transparent [&_table]:border-collapse [&_td]:border [&_td]:border-stone-300 [&_td]:px-2 [&_th]:border [&_th]:border-stone-300 [&_th]:px-2 [&_ul]:list-disc [&_ul]:pl-6 [&>*+*]:mt-3`}
      data-testid={testId}
      // Raw HTML in the source is escaped and links are checked by the renderer; see server/markdown/render.ts.
      dangerouslySetInnerHTML={{ __html: html }}
    />
  );
}

export function CheckpointTimeline({ checkpoints, now }: { checkpoints: Detail["checkpoints"]; now: number }) {
  if (checkpoints.length === 0) return <p className="text-sm text-stone-600">No checkpoint yet.</p>;
  return (
    <ol className="relative flex flex-col gap-4 border-l-2 border-violet-200 pl-5">
      {checkpoints.map((c) => (
        <li key={c.id} className="relative">
          <span aria-hidden className="absolute -left-[1.62rem] top-1.5 size-3 rounded-full border-2 border-white bg-violet-500" />
          <p className="text-xs text-stone-500 tabular-nums">
            {stamp(c.at)} · {ago(now - Date.parse(c.at))} · <span className="font-mono">{c.runtime ?? "?"}</span>
            {c.who ? ` · ${c.who}` : ""}
            {c.keyPrefix ? <span className="font-mono"> · {c.keyPrefix}…</span> : null}
          </p>
          <dl className="mt-1 grid grid-cols-[5rem_minmax(0,1fr)] gap-x-2 gap-y-0.5 text-sm">
            {(["done", "next", "gotchas", "note"] as const).map((k) =>
              c[k] ? (
                <div key={k} className="contents">
                  <dt className="text-stone-500">{k}</dt>
                  <dd className="min-w-0 whitespace-pre-wrap [overflow-wrap:anywhere]">{c[k]}</dd>
                </div>
              ) : null,
            )}
            {c.branch ? (
              <>
                <dt className="text-stone-500">branch</dt>
                <dd className="font-mono">{c.branch}</dd>
              </>
            ) : null}
          </dl>
        </li>
      ))}
    </ol>
  );
}

type Comment = Detail["comments"][number];

function CommentItem({ comment, replies, now }: { comment: Comment; replies: Map<string | null, Comment[]>; now: number }) {
  return (
    <li className="flex flex-col gap-2">
      <article className="rounded-lg border border-stone-200 bg-white p-3" aria-label={`Comment by ${comment.author ?? "unknown"}`}>
        <p className="text-xs text-stone-500 tabular-nums">
          {comment.author ?? "unknown"} · <span className="font-mono">{comment.runtime ?? "?"}</span> · {stamp(comment.createdAt)} ({ago(now - Date.parse(comment.createdAt))})
        </p>
        {comment.retracted ? (
          <p className="mt-1 text-sm text-stone-500">
            <del>{comment.body}</del> <span>retracted: {comment.retractNote}</span>
          </p>
        ) : (
          <Markdown html={comment.bodyHtml} testId="comment-body" className="mt-1 text-sm" />
        )}
      </article>
      {(replies.get(comment.id) ?? []).length > 0 ? (
        <ul className="ml-6 flex flex-col gap-2 border-l border-stone-200 pl-3">
          {replies.get(comment.id)!.map((r) => (
            <CommentItem key={r.id} comment={r} replies={replies} now={now} />
          ))}
        </ul>
      ) : null}
    </li>
  );
}

/** One page of the thread (a reply whose parent is on an earlier page is shown at the top level). */
export function CommentThread({ comments, pages, now }: { comments: Detail["comments"]; pages: Detail["commentPages"]; now: number }) {
  const here = new Set(comments.map((c) => c.id));
  const replies = new Map<string | null, Comment[]>();
  for (const c of comments) {
    const parent = c.parent !== null && here.has(c.parent) ? c.parent : null;
    replies.set(parent, [...(replies.get(parent) ?? []), c]);
  }
  const busy = useNavigation().formData?.get("intent") === "comment";
  return (
    <div className="flex flex-col gap-3">
      {comments.length === 0 ? <p className="text-sm text-stone-600">No comments yet.</p> : null}
      <ul className="flex flex-col gap-2">
        {(replies.get(null) ?? []).map((c) => (
          <CommentItem key={c.id} comment={c} replies={replies} now={now} />
        ))}
      </ul>
      {pages.later || pages.next ? (
        <nav aria-label="Comment pages" className="flex gap-4 text-sm">
          {pages.later ? <Link to="?#comments-heading">First comments</Link> : null}
          {pages.next ? <Link to={`?comments=${encodeURIComponent(pages.next)}#comments-heading`}>Later comments</Link> : null}
        </nav>
      ) : null}
      <Form method="post" className="flex flex-col gap-2" aria-label="Add a comment">
        <label htmlFor="comment-body" className="text-sm font-medium">
          Add a comment
        </label>
        <textarea id="comment-body" name="body" rows={3} required className={input} />
        <div>
          <button type="submit" name="intent" value="comment" className={primary} disabled={busy}>
            {busy ? "Posting…" : "Comment"}
          </button>
        </div>
      </Form>
    </div>
  );
}

const logCell = "px-2 py-1.5";

export function ActivityLog({ entries, pages }: { entries: Detail["activity"]; pages: Detail["activityPages"] }) {
  if (entries.length === 0) return <p className="text-sm text-muted">Nothing has happened to this issue yet.</p>;
  return (
    <div>
      <table className="stack-md w-full border-collapse text-left text-sm">
        <caption className="sr-only">Activity log, newest first</caption>
        <thead className="border-b border-line-strong text-muted">
          <tr>
            <th scope="col" className="px-2 py-1.5 font-medium whitespace-nowrap">When</th>
            <th scope="col" className="px-2 py-1.5 font-medium">What</th>
            <th scope="col" className="px-2 py-1.5 font-medium">Detail</th>
            <th scope="col" className="px-2 py-1.5 font-medium md:w-56">Who</th>
          </tr>
        </thead>
        <tbody className="max-md:space-y-2">
          {entries.map((e) => (
            <tr key={e.id} className="border-b border-line align-top max-md:py-2" data-testid="activity-entry" data-kind={e.kind} data-runtime={e.runtime ?? ""}>
              <td className={`${logCell} whitespace-nowrap text-muted tabular-nums`} data-label="When">{stamp(e.at)}</td>
              <td className={`${logCell} font-medium whitespace-nowrap`} data-label="What">{e.label}</td>
              <td className={`${logCell} min-w-0 text-stone-800 [overflow-wrap:anywhere]`} data-label="Detail">{e.text}</td>
              <td className={logCell} data-label="Who">
                <span className="flex min-w-0 flex-col">
                  <span className="[overflow-wrap:anywhere]">{e.who}</span>
                  <span className="font-mono text-xs text-muted">
                    {e.runtime ?? "—"}
                    {e.keyPrefix ? ` · ${e.keyPrefix}…` : ""}
                  </span>
                </span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {pages.later || pages.next ? (
        <nav aria-label="Activity pages" className="mt-2 flex gap-4 text-sm">
          {pages.later ? <Link to="?#activity-heading">Latest activity</Link> : null}
          {pages.next ? <Link to={`?activity=${encodeURIComponent(pages.next)}#activity-heading`}>Older activity</Link> : null}
        </nav>
      ) : null}
    </div>
  );
}

/** The lease line: who holds it, on which runtime, key and session, how it is renewed, and for how long yet. */
export function LeaseLine({ lease, session, now }: { lease: Detail["issue"]["lease"]; session: Detail["leaseSession"]; now: number }) {
  if (!lease) return null;
  const left = Date.parse(lease.expiresAt) - now;
  return (
    <span className="inline-flex min-w-0 flex-wrap items-center gap-x-2">
      <span className="[overflow-wrap:anywhere]">
        claimed by <span className="font-mono">{lease.runtime}</span> for {lease.holder?.email ?? lease.holderUserId} (fence {lease.fence})
      </span>
      {session ? (
        <span className="text-xs text-stone-500" data-testid="lease-session">
          {session.session ? <span className="font-mono">session {session.session}</span> : "no session"} · renewed {renewedByText(session.renewedBy)}
        </span>
      ) : null}
      <span className="inline-block w-[9ch] font-mono tabular-nums" data-testid="lease-left">
        {left > 0 ? countdown(left) : "expired"}
      </span>
    </span>
  );
}

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

/** CI's word on the last finish and what it named (decision 045); nothing for an issue never verified. */
export function VerificationRows({ verification, evidence }: { verification?: string; evidence?: { commit: string | null; branch: string | null; pr: string | null } }) {
  if (!verification && !evidence) return null;
  const said: Record<string, string> = {
    pending: "pending: CI has not passed it yet, so nothing waiting on it starts",
    stale: "stale: pending past the project's window; pass or fail it by hand below",
    passed: "passed",
    failed: "failed: back in the queue with the failing checks as gotchas",
  };
  return (
    <>
      {verification ? (
        <>
          <dt className="text-stone-600">Verification</dt>
          <dd>{said[verification] ?? verification}</dd>
        </>
      ) : null}
      {evidence ? (
        <>
          <dt className="text-stone-600">Evidence</dt>
          <dd className="font-mono text-xs break-all">
            {[evidence.commit && `commit ${evidence.commit}`, evidence.branch && `branch ${evidence.branch}`, evidence.pr && `request ${evidence.pr}`].filter(Boolean).join(" · ")}
          </dd>
        </>
      ) : null}
    </>
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
