import { Form, Link } from "react-router";
import { Button, Field } from "../ui.tsx";
import { focusRing } from "./bits.tsx";

/** What the page's loader reads from server/intake/triage.ts `heldForIssue`. */
export interface HeldOnIssue {
  issue: { source: string | null; author: string | null; reason: "filed" | "edited"; title: string; body: string; digest: string } | null;
  comments: { id: string; author: string; body: string; digest: string; receivedAt: string }[];
  moreComments: boolean;
}

/** Outside text is shown exactly as it is held, never rendered: a Markdown comment or a hidden tag would not show, and the person signs what they see. */
const verbatim = "max-h-96 overflow-auto rounded border border-amber-300 bg-white p-3 font-mono text-xs whitespace-pre-wrap break-words text-stone-900";

/**
 * An issue from outside the team, awaiting triage: a person reads its text (shown verbatim, not
 * rendered), then accepts exactly that text (the form carries its SHA-256; text changed since it
 * was shown is refused) or cancels it with a reason. Plain forms, so they work before (or
 * without) JavaScript. No agent can do either (docs/decisions/038).
 */
export function TriageBox({ held }: { held: NonNullable<HeldOnIssue["issue"]> }) {
  return (
    <section id="triage" aria-labelledby="triage-heading" className="flex flex-col gap-3 rounded-lg border border-amber-300 bg-amber-50 p-4 text-sm text-stone-900" data-testid="triage">
      <h2 id="triage-heading" className="font-semibold">Awaiting triage</h2>
      <p>
        {held.reason === "edited" ? "Changed at the source after it was accepted: the new text below waits for a person. Agents keep reading the text that was accepted. " : "Filed by someone outside the team. "}
        Its text becomes an agent's instructions, so no agent is handed it, or reads it, until a person accepts it. Accept only what you read here.
      </p>
      <p className="text-stone-700">
        {held.source ? `From ${held.source}` : "From outside the team"}
        {held.author ? ` by @${held.author}` : ""}.
      </p>
      <div className="flex flex-col gap-1" data-testid="held-text">
        <span className="text-xs font-medium text-stone-700">Title</span>
        <pre className={verbatim} data-testid="held-title">{held.title}</pre>
        <span className="text-xs font-medium text-stone-700">Body</span>
        <pre className={verbatim} data-testid="held-body">{held.body || "(empty)"}</pre>
      </div>
      <div className="flex flex-wrap items-end gap-4">
        <Form method="post">
          <input type="hidden" name="digest" value={held.digest} />
          <Button name="intent" value="accept">Accept this text</Button>
        </Form>
        <Form method="post" className="flex flex-wrap items-end gap-2" aria-label="Cancel from triage">
          <Field label="Reason" name="reason" required placeholder="spam, duplicate, out of scope…" />
          <Button name="intent" value="cancel" tone="danger">Cancel</Button>
        </Form>
      </div>
    </section>
  );
}

/**
 * Outsiders' comments held on this issue: shown to people only, marked, verbatim; no agent reads
 * them until a person releases one (the form carries the SHA-256 of the text shown). Discard
 * drops it for good.
 */
export function HeldComments({ held }: { held: HeldOnIssue }) {
  if (held.comments.length === 0) return null;
  return (
    <section aria-labelledby="held-comments-heading" className="flex flex-col gap-3 rounded-lg border border-amber-300 bg-amber-50 p-4 text-sm text-stone-900" data-testid="held-comments">
      <h2 id="held-comments-heading" className="font-semibold">Held comments from outside the team</h2>
      <p>No agent reads these until a person releases them. Release only what you read here.</p>
      <ul className="flex flex-col gap-3">
        {held.comments.map((c) => (
          <li key={c.id} className="flex flex-col gap-2" data-testid="held-comment">
            <span className="text-xs font-semibold text-amber-900">held · @{c.author} · {c.receivedAt.slice(0, 16).replace("T", " ")} UTC</span>
            <pre className={verbatim}>{c.body}</pre>
            <div className="flex flex-wrap gap-2">
              <Form method="post">
                <input type="hidden" name="comment" value={c.id} />
                <input type="hidden" name="digest" value={c.digest} />
                <Button name="intent" value="release-comment">Release this comment</Button>
              </Form>
              <Form method="post">
                <input type="hidden" name="comment" value={c.id} />
                <Button name="intent" value="discard-comment" tone="secondary">Discard</Button>
              </Form>
            </div>
          </li>
        ))}
      </ul>
      {held.moreComments ? <p className="text-stone-700">More are held: release or discard these to see the next.</p> : null}
    </section>
  );
}

/**
 * An issue awaiting triage in a list (the queue): a badge that says so, never shown as ready
 * work, and leads to the issue page's Accept and Cancel.
 */
export function AwaitingTriageBadge({ identifier }: { identifier: string }) {
  return (
    <Link
      to={`/dash/issues/${identifier}#triage`}
      title="Filed by someone outside the team: no agent is handed it until a person accepts it. Open it to read it, then accept or cancel."
      aria-label={`${identifier} is awaiting triage: accept or cancel it`}
      data-testid="awaiting-triage"
      className={`inline-flex items-center rounded-full border border-amber-400 bg-amber-50 px-2 py-px text-xs font-semibold whitespace-nowrap text-amber-900 hover:bg-amber-100 ${focusRing}`}
    >
      awaiting triage
    </Link>
  );
}
