import { eq, sql } from "drizzle-orm";
import { issues, projects, relations } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import { invalidInput } from "../errors.ts";
import { newId } from "../orgs/index.ts";
import { catchUpTermsFor, gatesApply, requireChangeType, requireDuplicateCheck } from "./gates.ts";
import { indexTerms } from "./similar.ts";
import { setLabels } from "./labels.ts";
import { rankingColumns } from "./levels.ts";
import { lockOrgGraph, rerank } from "./ranking.ts";
import type { SaveInput } from "./schemas.ts";
import { orgTimeZone, parseDueAt, projectFor, resolveAssignee } from "./inputs.ts";
import { findIssue, lockIssues, validParent } from "./lookups.ts";
import { gatesDependentsNow, inTransaction } from "./store.ts";
import { issueView } from "./views.ts";
import { meter } from "../usage/meter.ts";

/** Creates an issue: numbered in its project, ranked, with its blockers' edges and labels. */
export async function createIssue(ctx: Ctx, input: SaveInput) {
  if (!input.title) throw invalidInput("title is required to create an issue", "Pass a one-line title.");
  if (input.work === undefined) {
    throw invalidInput(
      "work is required to create an issue",
      "Pass work:true for a unit an agent executes, work:false for a tracking container.",
    );
  }
  const hasBlockers = (input.blockedBy?.length ?? 0) > 0;
  if (hasBlockers === Boolean(input.noDependency)) {
    throw invalidInput(
      hasBlockers ? "pass blockedBy or noDependency, not both" : "a dependency declaration is required to create an issue",
      'Pass blockedBy: ["RTSC-12"] with what this depends on, or noDependency: "<why it depends on nothing>".',
    );
  }
  if (input.status && input.status !== "todo" && input.status !== "blocked") {
    throw invalidInput(`a new issue starts as todo or blocked, not ${input.status}`, "Create it, then claim it.");
  }
  if (input.claimToken) throw invalidInput("a new issue has no claim", "Omit claimToken when creating.");
  if (input.cancelReason) throw invalidInput("a new issue cannot be canceled", "Omit cancelReason when creating.");
  if (input.triage) throw invalidInput("only issues from intake await triage", "Omit triage when creating.");
  if (input.handoff) throw invalidInput("handoff goes with entering review", "Omit handoff when creating.");
  requireChangeType(ctx.principal, input);
  if (gatesApply(ctx.principal)) await catchUpTermsFor(ctx);

  return inTransaction(ctx, async (scope) => {
    const { tx, now, cipher } = scope;
    const orgId = ctx.principal.orgId;
    if (hasBlockers) await lockOrgGraph(tx, orgId);
    const project = await projectFor(tx, ctx, input.project);
    const [numbered] = await tx
      .update(projects)
      .set({ nextNumber: sql`${projects.nextNumber} + 1` })
      .where(eq(projects.id, project.id))
      .returning({ number: sql<number>`${projects.nextNumber} - 1`, prefix: projects.prefix });
    const number = Number(numbered!.number);
    // The prefix as the numbering's row lock reads it: a rename that committed meanwhile is seen (decision 089).
    const identifier = `${numbered!.prefix}-${number}`;
    // After the numbering, which locks the project's row: two creates there take turns, so the
    // second one's check sees the first one's issue (decision 066).
    await requireDuplicateCheck(scope, input);
    // Blockers are share-locked so a concurrent finish cannot slip between our read of their status and our edge.
    const blockers = hasBlockers ? await lockIssues(tx, ctx.principal, input.blockedBy!, "share") : [];
    const assigneeId = input.assignee !== undefined ? await resolveAssignee(tx, ctx, input.assignee) : null;
    const parentId = input.parent ? (await validParent(tx, ctx.principal, input.parent, null)).id : null;
    const dueAt = input.dueAt != null ? parseDueAt(input.dueAt, await orgTimeZone(tx, orgId)) : null;
    const priority = input.priority ?? 0;
    const ranking = rankingColumns(priority, dueAt, dueAt ? now : null, false, now);
    const id = newId();
    const row: typeof issues.$inferInsert = {
      id,
      orgId,
      projectId: project.id,
      number,
      identifier,
      titleEnc: cipher.encrypt(input.title!),
      bodyEnc: cipher.encrypt(input.body ?? null),
      noDependencyEnc: cipher.encrypt(input.noDependency ?? null),
      work: input.work!,
      changeType: input.changeType ?? null,
      status: input.status ?? "todo",
      priority,
      assigneeId,
      parentId,
      authorId: ctx.principal.userId,
      dueAt,
      dueSetAt: dueAt ? now : null,
      ...ranking,
      effectiveLevel: ranking.ownLevel,
      effectiveDueAt: dueAt,
      openBlockerCount: blockers.filter(gatesDependentsNow).length,
      createdAt: now,
      updatedAt: now,
    };
    await tx.insert(issues).values(row);
    await indexTerms(tx, cipher, orgId, [{ id, title: input.title!, body: input.body ?? null, status: row.status! }], { fresh: true });
    meter(scope, "save_issue", "work", id);
    if (blockers.length > 0) {
      await tx
        .insert(relations)
        .values(blockers.map((b) => ({ id: newId(), orgId, sourceId: b.id, targetId: id, type: "blocks" as const })));
      await rerank(tx, [id]);
    }
    if (input.labels) await setLabels(scope, id, input.labels);
    await recordActivity(scope, {
      issueId: id,
      kind: "created",
      detail: { work: row.work, changeType: row.changeType, priority, blockedBy: blockers.map((b) => b.identifier) },
    });
    await ctx.events.publish(tx, { orgId, kind: "issue.created", issueId: id, identifier });
    const created = await findIssue(tx, ctx.principal, identifier);
    return issueView(tx, ctx.principal, cipher, created, now);
  });
}
