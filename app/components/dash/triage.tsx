import { Form, Link } from "react-router";
import { Button, Field } from "../ui.tsx";
import { focusRing } from "./bits.tsx";

/**
 * An issue from outside the team, awaiting triage: a member reads it, then accepts it (the
 * page's `accept` intent, save_issue {triage: "accepted"}) or cancels it with a reason. Plain
 * forms, so they work before (or without) JavaScript.
 */
export function TriageBox() {
  return (
    <section id="triage" aria-labelledby="triage-heading" className="flex flex-col gap-3 rounded-lg border border-amber-300 bg-amber-50 p-4 text-sm text-stone-900" data-testid="triage">
      <h2 id="triage-heading" className="font-semibold">Awaiting triage</h2>
      <p>Filed by someone outside the team. Its text becomes an agent's instructions, so no agent is handed it until a member accepts it.</p>
      <div className="flex flex-wrap items-end gap-4">
        <Form method="post">
          <Button name="intent" value="accept">Accept</Button>
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
 * An issue awaiting triage in a list (the queue): a badge that says so, never shown as ready
 * work, and leads to the issue page's Accept and Cancel.
 */
export function AwaitingTriageBadge({ identifier }: { identifier: string }) {
  return (
    <Link
      to={`/dash/issues/${identifier}#triage`}
      title="Filed by someone outside the team: no agent is handed it until a member accepts it. Open it to accept or cancel."
      aria-label={`${identifier} is awaiting triage: accept or cancel it`}
      data-testid="awaiting-triage"
      className={`inline-flex items-center rounded-full border border-amber-400 bg-amber-50 px-2 py-px text-xs font-semibold whitespace-nowrap text-amber-900 hover:bg-amber-100 ${focusRing}`}
    >
      awaiting triage
    </Link>
  );
}
