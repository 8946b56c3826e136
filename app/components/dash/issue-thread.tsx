import { Form, Link, useNavigation } from "react-router";
import type { IssueDetail } from "../../../server/dash/issue.ts";
import { ago, stamp } from "./format.ts";
import { Markdown, input, primary } from "./issue.tsx";
import "./dash.css";

/** The issue page's thread (comments, a page at a time, and the comment form) and its activity log. */

type Detail = IssueDetail;
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
