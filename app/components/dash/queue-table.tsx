import { Link } from "react-router";
import type { QueuePage } from "../../../server/dash/queue.ts";
import { HolderPill, IssueLink, LevelName, SlaText, StatusBadge, WorkPills, linkClass } from "./bits.tsx";
import { stamp, timeLeft } from "./format.ts";
import { WhyText } from "./why.tsx";
import { AwaitingTriageBadge } from "./triage.tsx";
import { EmptyState } from "../ui.tsx";
import { queueHref } from "./queue.tsx";
import "./dash.css";

const cell = "px-2 py-2 align-top";

/** The queue page's table, in dispatch order (a card a row below lg), or what to do when it is empty. */
export function QueueTable({ page, now }: { page: QueuePage; now: number }) {
  if (page.issues.length === 0) {
    return page.counts.all === 0 && !page.input.q && !page.input.triage && page.input.status.length === 0 ? (
      <EmptyState title="The queue is empty.">
        <Link to="/dash/issues/new" className={linkClass}>Create an issue</Link> (press <kbd>c</kbd>), or let an agent file one with{" "}
        <code>save_issue</code>.
      </EmptyState>
    ) : (
      <EmptyState title="No issue matches these filters.">
        <Link to={queueHref(page.input, { status: [], priority: [], runtime: undefined, from: undefined, to: undefined, date: "created", q: undefined, lane: undefined, triage: undefined })} className={linkClass}>
          See every issue
        </Link>{" "}
        in the queue.
      </EmptyState>
    );
  }
  return (
    <table className="stack-lg w-full border-collapse text-left text-sm">
      <caption className="sr-only">Issues in dispatch order</caption>
      <thead className="border-b border-stone-300 text-stone-600">
        <tr>
          <th scope="col" className="w-12 px-2 py-2 text-right font-medium">#</th>
          <th scope="col" className="px-2 py-2 font-medium">Issue</th>
          <th scope="col" className="px-2 py-2 font-medium">State</th>
          <th scope="col" className="px-2 py-2 font-medium">Lane</th>
          <th scope="col" className="px-2 py-2 font-medium">Priority</th>
          <th scope="col" className="px-2 py-2 font-medium">Effective</th>
          <th scope="col" className="px-2 py-2 font-medium">Why</th>
          <th scope="col" className="px-2 py-2 font-medium">Deadline</th>
        </tr>
      </thead>
      <tbody className="max-lg:space-y-3">
        {page.issues.map((r) => (
          <tr key={r.identifier} data-testid={`queue-row-${r.identifier}`} className="border-b border-stone-200 max-lg:rounded-lg max-lg:border max-lg:bg-white max-lg:p-3">
            <td className={`${cell} tabular-nums text-stone-500 lg:w-12 lg:text-right`} data-label="Position">
              {r.position}
            </td>
            <td className={cell} data-label="Issue">
              <span className="flex min-w-0 flex-col gap-0.5">
                <span className="flex items-center gap-2">
                  <IssueLink identifier={r.identifier} row />
                  {!r.work ? <span className="text-xs text-stone-500">container</span> : null}
                </span>
                <span className="max-w-[24rem] text-stone-800">{r.title}</span>
              </span>
            </td>
            <td className={cell} data-label="State">
              <span className="flex flex-wrap items-center gap-1">
                <StatusBadge status={r.status} />
                {r.awaitingTriage ? <AwaitingTriageBadge identifier={r.identifier} /> : null}
                {r.holderRuntime && r.leaseExpiresAt ? <HolderPill runtime={r.holderRuntime} leftMs={Date.parse(r.leaseExpiresAt) - now} /> : null}
                <WorkPills pills={r.pills} />
                {r.openBlockers > 0 ? <span className="text-xs text-orange-800">waits on {r.openBlockers}</span> : null}
              </span>
            </td>
            <td className={`${cell} lg:max-w-[12rem] [overflow-wrap:anywhere]`} data-label="Lane">
              {r.lane ?? <span className="text-muted">unassigned</span>}
            </td>
            <td className={cell} data-label="Priority">
              <LevelName level={r.why.priorityLevel} />
            </td>
            <td className={cell} data-label="Effective">
              <LevelName level={r.why.effectiveLevel} />
            </td>
            <td className={`${cell} max-w-[18rem]`} data-label="Why">
              <WhyText why={r.why} />
            </td>
            <td className={cell} data-label="Deadline">
              {r.dueAt ? (
                <span className="flex flex-col">
                  <SlaText state={r.slaState}>
                    {r.slaState} · {r.timeRemainingMs !== null ? timeLeft(r.timeRemainingMs) : ""}
                  </SlaText>
                  <span className="text-xs text-stone-500">{stamp(r.dueAt)}</span>
                </span>
              ) : (
                <span className="text-stone-500">none</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
