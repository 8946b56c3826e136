import type { RankReason } from "../../../server/dash/why.ts";
import { IssueLink } from "./bits.tsx";
import { levelName, stamp } from "./format.ts";

/** One line on why an issue ranks where it does: inherited urgency, its own deadline, or its priority. */
export function WhyText({ why }: { why: RankReason }) {
  const parts = [];
  if (why.inheritedFrom) {
    parts.push(
      <span key="inherited">
        inherits {levelName(why.effectiveLevel)} from <Origin identifier={why.inheritedFrom.identifier} />
        {why.inheritedFrom.raisedByDeadline && why.inheritedFrom.raisedByDeadline !== levelName(why.effectiveLevel)
          ? ` (its deadline is ${why.inheritedFrom.raisedByDeadline})`
          : why.inheritedFrom.raisedByDeadline
            ? " (by its deadline)"
            : ""}
      </span>,
    );
  }
  if (why.raisedByDeadline) {
    parts.push(
      <span key="deadline">
        raised to {levelName(why.ownLevel)} by its deadline
        {why.raisedByDeadline !== levelName(why.ownLevel) ? ` (${why.raisedByDeadline})` : ""}
      </span>,
    );
  }
  if (why.deadlineFrom && (why.deadlineFrom.identifier !== why.inheritedFrom?.identifier || why.deadlineFrom.identifier === null)) {
    parts.push(
      <span key="due">
        carries the deadline of <Origin identifier={why.deadlineFrom.identifier} /> ({stamp(why.deadlineFrom.dueAt)})
      </span>,
    );
  } else if (why.deadlineFrom) {
    parts.push(<span key="due">and its deadline ({stamp(why.deadlineFrom.dueAt)})</span>);
  }
  if (parts.length === 0) return <span className="text-stone-500">own priority</span>;
  return <span className="flex flex-col gap-0.5">{parts}</span>;
}

/** The issue an urgency or deadline comes from; null: one outside the viewer's projects, not named (decision 042). */
function Origin({ identifier }: { identifier: string | null }) {
  return identifier === null ? <span>an issue outside your projects</span> : <IssueLink identifier={identifier} />;
}
