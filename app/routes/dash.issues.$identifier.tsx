import { data, Link } from "react-router";
import type { Route } from "./+types/dash.issues.$identifier";
import { requireMember } from "../auth.server.ts";
import { attempt, toErrorBody } from "../errors.server.ts";
import { editIssueInput, field } from "../../server/dash/forms.ts";
import { issueDetail } from "../../server/dash/issue.ts";
import { saveComment } from "../../server/issues/comments.ts";
import { addRelation, removeRelation, saveIssue } from "../../server/issues/index.ts";
import { relationInput } from "../../server/issues/schemas.ts";
import { invalidInput } from "../../server/errors.ts";
import { unquarantineIssue } from "../../server/issues/quarantine.ts";
import { forceRelease } from "../../server/queue/force-release.ts";
import { verifyByHand } from "../../server/verification/attest.ts";
import { acceptTriage, discardHeldComment, heldForIssue, releaseHeldComment } from "../../server/intake/triage.ts";
import { ErrorNote, Notice } from "../components/ui.tsx";
import { IssueLink, LevelName, LiveIndicator, SlaText, StatusBadge, WorkPills, linkClass } from "../components/dash/bits.tsx";
import { stamp, timeLeft, priorityName } from "../components/dash/format.ts";
import { DependencyGraph } from "../components/dash/graph.tsx";
import { CheckpointTimeline, LeaseLine, MarkdownBody, Section, VerificationRows } from "../components/dash/issue.tsx";
import { ActivityLog, CommentThread } from "../components/dash/issue-thread.tsx";
import { CancelForm, EditForm, PriorityForm, QuarantineBox, RelateForm, RelationList, ReleaseForm, VerifyByHandForm } from "../components/dash/issue-forms.tsx";
import { useLiveRevalidation, useServerNow } from "../components/dash/live.ts";
import { HeldComments, TriageBox } from "../components/dash/triage.tsx";
import { WhyText } from "../components/dash/why.tsx";
import { readForm } from "../forms.server.ts";

export function meta({ loaderData }: Route.MetaArgs) {
  const issue = loaderData?.detail.issue;
  return [{ title: issue ? `${issue.identifier} ${issue.title} · Retasc` : "Issue · Retasc" }];
}

/** One issue of the viewer's org; another org's issue is NOT_FOUND, exactly like a missing one. */
export async function loader({ request, context, params }: Route.LoaderArgs) {
  const { ctx, membership } = await requireMember(request, context);
  try {
    const query = new URL(request.url).searchParams;
    const [detail, held] = await Promise.all([
      issueDetail(ctx, { identifier: params.identifier }, { comments: query.get("comments") ?? undefined, activity: query.get("activity") ?? undefined }),
      heldForIssue(ctx, { identifier: params.identifier }),
    ]);
    return { detail, held, canRelease: membership.role === "owner" || membership.role === "admin" };
  } catch (error) {
    const { status, body } = toErrorBody(error, context.log);
    throw data(body, { status });
  }
}

/** Every action goes through the same server functions agents call over MCP, as this person (runtime "dash"). */
export async function action({ request, context, params }: Route.ActionArgs) {
  const { ctx } = await requireMember(request, context);
  const form = await readForm(request);
  const identifier = params.identifier;
  const intent = field(form, "intent");
  const result = await attempt(context.log, async () => {
    switch (intent) {
      case "edit":
        await saveIssue(ctx, editIssueInput(identifier, form));
        return "Saved.";
      case "reprioritize":
        await saveIssue(ctx, { identifier, priority: Number(field(form, "priority")) });
        return "Priority changed.";
      case "comment":
        await saveComment(ctx, { issue: identifier, body: field(form, "body") ?? "" });
        return "Comment added.";
      case "relate":
      case "unrelate": {
        // A form's fields are of unknown shape: parsed with the service's schema, so its errors are the service's.
        const relation = relationInput.parse({ sourceId: identifier, targetId: field(form, "other") ?? "", type: field(form, "type") });
        if (intent === "relate") await addRelation(ctx, relation);
        else await removeRelation(ctx, relation);
        return intent === "relate" ? "Relation added." : "Relation removed.";
      }
      case "cancel":
        await saveIssue(ctx, { identifier, status: "canceled", cancelReason: field(form, "reason") });
        return "Canceled.";
      case "accept":
        await acceptTriage(ctx, { identifier, digest: field(form, "digest") ?? "" });
        return "Accepted: agents can be handed it now.";
      case "release-comment":
        await releaseHeldComment(ctx, { comment: field(form, "comment") ?? "", digest: field(form, "digest") ?? "" });
        return "Released: the comment is in the thread, and agents read it from now on.";
      case "discard-comment":
        await discardHeldComment(ctx, { comment: field(form, "comment") ?? "" });
        return "Discarded: no one will read that comment here.";
      case "release":
        await forceRelease(ctx, { identifier, reason: field(form, "reason") ?? "" });
        return "Claim released: the issue is available again.";
      case "unquarantine":
        await unquarantineIssue(ctx, { identifier });
        return "Released: agents can be handed it again.";
      case "verify-passed":
      case "verify-failed": {
        const verdict = intent === "verify-passed" ? "passed" : "failed";
        await verifyByHand(ctx, { identifier, verdict, note: field(form, "note") || undefined });
        return verdict === "passed" ? "Passed by hand: what waits on it can start." : "Failed by hand: it is back in the queue.";
      }
      default:
        throw invalidInput(`unknown action ${intent ?? ""}`.trim(), "Use the page's buttons.");
    }
  });
  if (result.ok) return { done: result.value, error: null };
  return data({ done: null, error: result.error }, { status: 400 });
}

export default function IssuePage({ loaderData, actionData }: Route.ComponentProps) {
  const { detail, held, canRelease } = loaderData;
  const { issue } = detail;
  const live = useLiveRevalidation();
  const now = useServerNow(detail.now);
  const terminal = issue.status === "done" || issue.status === "canceled";
  return (
    <article className="flex flex-col gap-8" aria-labelledby="issue-title">
      <header className="flex flex-col gap-2">
        <div className="flex flex-wrap items-center justify-between gap-3">
          <nav aria-label="Breadcrumb" className="text-sm">
            <Link to="/dash/queue" className={linkClass}>Queue</Link> <span aria-hidden>/</span>{" "}
            <span className="font-mono">{issue.identifier}</span>
          </nav>
          <LiveIndicator state={live} />
        </div>
        <h1 id="issue-title" className="text-2xl font-semibold break-words">
          <span className="mr-2 font-mono text-stone-500">{issue.identifier}</span>
          {issue.title}
        </h1>
        <div className="flex flex-wrap items-center gap-2 text-sm">
          <StatusBadge status={issue.status} />
          <WorkPills pills={detail.pills} />
          {!issue.work ? <span className="text-stone-600">container</span> : null}
          <LeaseLine lease={issue.lease} session={detail.leaseSession} now={now} />
        </div>
      </header>

      {actionData?.error ? <ErrorNote error={actionData.error} /> : null}
      {actionData?.done ? <Notice>{actionData.done}</Notice> : null}
      {held.issue && !terminal ? <TriageBox held={held.issue} /> : null}
      {"quarantine" in issue && issue.quarantine ? <QuarantineBox quarantine={issue.quarantine} /> : null}
      <HeldComments held={held} />

      <div className="grid gap-8 lg:grid-cols-[minmax(0,1fr)_20rem]">
        <div className="flex min-w-0 flex-col gap-8">
          <Section title="Description" id="description-heading">
            <MarkdownBody html={detail.bodyHtml} />
          </Section>
          <Section title="Dependencies" id="graph-heading">
            <DependencyGraph graph={detail.graph} />
            <RelationList detail={detail} />
            {terminal ? null : <RelateForm prefix={issue.identifier.split("-")[0]!} />}
          </Section>
          <Section title="Checkpoints" id="checkpoints-heading">
            <CheckpointTimeline checkpoints={detail.checkpoints} now={now} />
          </Section>
          <Section title="Attachments" id="attachments-heading">
            <AttachmentList attachments={detail.attachments} />
          </Section>
          <Section title="Comments" id="comments-heading">
            <CommentThread comments={detail.comments} pages={detail.commentPages} now={now} />
          </Section>
        </div>

        <aside className="flex flex-col gap-6" aria-label="Details and actions">
          <dl className="grid grid-cols-[7rem_1fr] gap-x-3 gap-y-2 rounded-lg border border-stone-200 bg-white p-4 text-sm">
            <dt className="text-stone-600">Priority</dt>
            <dd>{priorityName(issue.priority)}</dd>
            <dt className="text-stone-600">Effective</dt>
            <dd><LevelName level={issue.effectiveLevel} /></dd>
            <dt className="text-stone-600">Why</dt>
            <dd><WhyText why={detail.why} /></dd>
            <dt className="text-stone-600">Deadline</dt>
            <dd>
              {issue.dueAt ? (
                <SlaText state={issue.slaState}>
                  {stamp(issue.dueAt)}, {issue.slaState}
                  {issue.timeRemainingMs !== null ? ` (${timeLeft(issue.timeRemainingMs)})` : ""}
                </SlaText>
              ) : (
                "none"
              )}
            </dd>
            <dt className="text-stone-600">Lane</dt>
            <dd>{issue.assignee?.email ?? "unassigned"}</dd>
            <dt className="text-stone-600">Author</dt>
            <dd>{issue.author?.email ?? "—"}</dd>
            <dt className="text-stone-600">Labels</dt>
            <dd>{issue.labels.length ? issue.labels.join(", ") : "none"}</dd>
            {issue.parent ? (
              <>
                <dt className="text-stone-600">Parent</dt>
                <dd><IssueLink identifier={issue.parent} /></dd>
              </>
            ) : null}
            {issue.children.length ? (
              <>
                <dt className="text-stone-600">Children</dt>
                <dd className="flex flex-wrap gap-2">{issue.children.map((c) => <IssueLink key={c} identifier={c} />)}</dd>
              </>
            ) : null}
            <dt className="text-stone-600">Branch</dt>
            <dd className="font-mono text-xs break-all">{issue.branch}</dd>
            {issue.noDependency ? (
              <>
                <dt className="text-stone-600">No dependency</dt>
                <dd>{issue.noDependency}</dd>
              </>
            ) : null}
            <VerificationRows verification={issue.verification} evidence={issue.evidence} />
            {issue.cancelReason ? (
              <>
                <dt className="text-stone-600">Canceled</dt>
                <dd>{issue.cancelReason}</dd>
              </>
            ) : null}
            <dt className="text-stone-600">Created</dt>
            <dd className="tabular-nums">{stamp(issue.createdAt)}</dd>
            <dt className="text-stone-600">Updated</dt>
            <dd className="tabular-nums">{stamp(issue.updatedAt)}</dd>
          </dl>
          {issue.verification === "pending" || issue.verification === "stale" ? <VerifyByHandForm /> : null}
          {terminal ? null : (
            <>
              <PriorityForm detail={detail} />
              {issue.lease && canRelease ? <ReleaseForm /> : null}
            </>
          )}
          <details className="rounded-lg border border-stone-200 bg-white p-4">
            <summary className="cursor-pointer font-medium">Edit</summary>
            <div className="mt-3">
              <EditForm detail={detail} />
            </div>
          </details>
          {terminal ? null : (
            <details className="rounded-lg border border-red-200 bg-white p-4">
              <summary className="cursor-pointer font-medium text-red-900">Cancel…</summary>
              <div className="mt-3">
                <CancelForm />
              </div>
            </details>
          )}
        </aside>
      </div>

      <Section title="Activity" id="activity-heading">
        <ActivityLog entries={detail.activity} pages={detail.activityPages} />
      </Section>
    </article>
  );
}

/** Links open elsewhere without handing this page to them; files download through /dash/attachments/:id. */
function AttachmentList({ attachments }: { attachments: Route.ComponentProps["loaderData"]["detail"]["attachments"] }) {
  if (attachments.length === 0) return <p className="text-sm text-stone-600">No attachments.</p>;
  return (
    <ul className="flex flex-col gap-2 text-sm" aria-label="Attachments">
      {attachments.map((a) => (
        <li key={a.id} className={`flex flex-wrap items-center gap-3 ${a.obsolete ? "text-stone-500" : ""}`}>
          {a.kind === "link" ? (
            <a href={a.url} target="_blank" rel="noopener noreferrer" className={`${linkClass} break-all`}>
              {a.title ?? a.url}
            </a>
          ) : (
            <>
              {a.thumbnail ? <img src={a.url} alt="" loading="lazy" className="h-12 w-12 rounded border border-stone-200 object-cover" /> : null}
              <a href={a.url} download={a.title ?? undefined} className={`${linkClass} break-all`}>
                {a.title}
              </a>
              <span className="text-stone-600 tabular-nums">
                {byteSize(a.size ?? 0)} · {a.contentType}
              </span>
            </>
          )}
          {a.obsolete ? <span className="text-stone-600">obsolete{a.obsoleteReason ? `: ${a.obsoleteReason}` : ""}</span> : null}
        </li>
      ))}
    </ul>
  );
}

const byteSize = (n: number) => (n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`);

export function ErrorBoundary({ error, params }: Route.ErrorBoundaryProps) {
  const body = (error as { data?: { code?: string; message?: string; hint?: string } })?.data;
  return (
    <div role="alert" className="flex flex-col gap-2">
      <h1 className="text-2xl font-semibold">{body?.code === "NOT_FOUND" ? `${params.identifier} not found` : "This issue could not be shown"}</h1>
      <p className="text-stone-700">{body?.message ?? "Something went wrong."}</p>
      <Link to="/dash/queue" className={linkClass}>Back to the queue</Link>
    </div>
  );
}
