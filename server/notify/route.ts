import { and, desc, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { issues, leases, members, notifyBindings } from "../../db/schema/index.ts";
import { memberProjectIds } from "../orgs/scope.ts";
import type { JobPayload } from "../outbox/jobs.ts";
import { enqueue } from "../outbox/index.ts";

type IssueEvent = JobPayload<"notify.issue_event">;

/**
 * Who hears of an event: the humans tied to the issue by it. done and canceled: the author;
 * review: the reviewer (the issue's assignee in review); assigned: the assignee; reclaimed: the
 * person whose agent held the lapsed lease; verification_failed: the author and the human whose
 * agent finished it; verification_stale: the same two; issue_quarantined: the author and the human whose agent held its last claim. Never the actor, the human behind the acting key, and never a member scoped
 * away from the issue's project (decision 042): the message names the issue and its title.
 */
export async function recipientsOf(db: Db, event: IssueEvent): Promise<string[]> {
  const [row] = await db
    .select({ orgId: issues.orgId, projectId: issues.projectId, authorId: issues.authorId, assigneeId: issues.assigneeId })
    .from(issues)
    .where(eq(issues.id, event.issueId));
  if (!row || row.orgId !== event.orgId) return [];
  const lastLeaseEnded = async (reason: "expired" | "finished" | "any") => {
    const [lease] = await db
      .select({ userId: leases.userId })
      .from(leases)
      .where(and(eq(leases.issueId, event.issueId), reason === "any" ? undefined : eq(leases.endReason, reason)))
      .orderBy(desc(leases.fence))
      .limit(1);
    return lease?.userId ?? null;
  };
  let people: (string | null)[] = [];
  switch (event.kind) {
    case "done":
    case "canceled":
      people = [row.authorId];
      break;
    case "review":
    case "assigned":
      people = [row.assigneeId];
      break;
    case "reclaimed":
      people = [await lastLeaseEnded("expired")];
      break;
    case "verification_failed":
    case "verification_stale":
      people = [row.authorId, await lastLeaseEnded("finished")];
      break;
    case "issue_quarantined":
      people = [row.authorId, await lastLeaseEnded("any")];
      break;
  }
  const wanted = [...new Set(people.filter((person): person is string => person !== null && person !== event.actorId))];
  if (wanted.length === 0) return wanted;
  const scopedAway = await db
    .select({ userId: members.userId })
    .from(members)
    .where(
      and(
        eq(members.orgId, row.orgId),
        inArray(members.userId, wanted),
        sql`${memberProjectIds} is not null and not (${row.projectId} = any(${memberProjectIds}))`,
      ),
    );
  return wanted.filter((person) => !scopedAway.some((s) => s.userId === person));
}

/**
 * Fans an event out, inside the event job's receipt transaction: one `notify.send` job per
 * channel the recipient has bound, each retried on its own. Mutes are not read here: they
 * apply when each message is sent. Returns how many messages were queued.
 */
export async function fanOut(tx: Db, event: IssueEvent): Promise<number> {
  let queued = 0;
  for (const person of await recipientsOf(tx, event)) {
    const bound = await tx
      .select({ channel: notifyBindings.channel })
      .from(notifyBindings)
      .where(and(eq(notifyBindings.orgId, event.orgId), eq(notifyBindings.userId, person), eq(notifyBindings.status, "active")));
    for (const { channel } of bound) {
      await enqueue(tx, "notify.send", { orgId: event.orgId, issueId: event.issueId, kind: event.kind, userId: person, channel });
    }
    queued += bound.length;
  }
  return queued;
}
