import type { IssueDetail } from "../../../server/dash/issue.ts";
import { focusRing } from "./bits.tsx";
import "./dash.css";
import { ago, countdown, renewedByText, stamp } from "./format.ts";

/** Sections of the issue drill-down, and the field and button styles its forms share; the thread is in issue-thread.tsx, the forms in issue-forms.tsx. */

type Detail = IssueDetail;
export const input = `w-full rounded border border-stone-300 bg-white px-2 py-1.5 text-sm ${focusRing}`;
const button = `rounded px-3 py-1.5 text-sm font-medium ${focusRing}`;
export const primary = `${button} bg-stone-900 text-white hover:bg-stone-700 disabled:opacity-60`;
export const secondary = `${button} border border-stone-300 bg-white hover:bg-stone-100`;
export const danger = `${button} border border-red-300 bg-white text-red-800 hover:bg-red-50`;

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

/** Server-rendered Markdown (a body or a comment), styled for reading. */
export function Markdown({ html, testId, className = "" }: { html: string; testId: string; className?: string }) {
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
