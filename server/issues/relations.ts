import type { z } from "zod";
import { and, eq, sql } from "drizzle-orm";
import { issues, relations } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import { DomainError, invalidInput } from "../errors.ts";
import { newId } from "../orgs/index.ts";
import { lockOrgGraph, reaches, rerank } from "./ranking.ts";
import { relationInput } from "./schemas.ts";
import { lockIssues } from "./lookups.ts";
import { gatesDependentsNow, inTransaction, type WriteScope } from "./store.ts";
import { meter } from "../usage/meter.ts";

type RelationInput = ReturnType<typeof relationInput.parse>;
type RelationEnd = Awaited<ReturnType<typeof lockIssues>>[number];
interface RelationEnds {
  source: RelationEnd;
  target: RelationEnd;
  sourceIdent: string;
  targetIdent: string;
  type: Exclude<RelationInput["type"], "blocked_by">;
}

/**
 * One relation change in a transaction: `blocked_by` is stored as the reverse `blocks`; the org's
 * dependency graph (for `blocks`) and both issues are locked before `apply` runs. When `apply`
 * reports the change took effect, the target's open-blocker count and the rank follow it, and it
 * is recorded on both issues and published.
 */
async function changeRelation(
  ctx: Ctx,
  input: RelationInput,
  change: "added" | "removed",
  apply: (scope: WriteScope, ends: RelationEnds) => Promise<boolean>,
) {
  const [sourceIdent, targetIdent] = input.type === "blocked_by" ? [input.targetId, input.sourceId] : [input.sourceId, input.targetId];
  const type = input.type === "blocked_by" ? "blocks" : input.type;
  return inTransaction(ctx, async (scope) => {
    const { tx } = scope;
    const orgId = ctx.principal.orgId;
    if (type === "blocks") await lockOrgGraph(tx, orgId);
    const locked = await lockIssues(tx, ctx.principal, [sourceIdent, targetIdent], "update");
    // Found as asked, an old prefix's identifier included; written and answered as they read now (decision 089).
    const source = locked.find((r) => r.asked.includes(sourceIdent))!;
    const target = locked.find((r) => r.asked.includes(targetIdent))!;
    const changed = await apply(scope, { source, target, sourceIdent: source.identifier, targetIdent: target.identifier, type });
    if (changed) {
      if (change === "added") meter(scope, "add_relation", "dispatch", target.id);
      else meter(scope, "remove_relation", "bookkeeping", target.id);
      if (type === "blocks") {
        if (gatesDependentsNow(source)) {
          const step = change === "added" ? sql`${issues.openBlockerCount} + 1` : sql`${issues.openBlockerCount} - 1`;
          await tx.update(issues).set({ openBlockerCount: step }).where(eq(issues.id, target.id));
        }
        await rerank(tx, [source.id]);
      }
      for (const issueId of [source.id, target.id]) {
        await recordActivity(scope, {
          issueId,
          kind: `relation_${change}`,
          detail: { source: source.identifier, target: target.identifier, type },
        });
      }
      await ctx.events.publish(tx, { orgId, kind: `relation.${change}`, identifier: target.identifier });
    }
    return { sourceId: source.identifier, targetId: target.identifier, type, changed };
  });
}

/** Adds a relation. `blocks`/`blocked_by` are dispatch edges: cycles are refused. */
export async function addRelation(ctx: Ctx, raw: z.input<typeof relationInput>) {
  const input = relationInput.parse(raw);
  if (input.sourceId === input.targetId) throw invalidInput("an issue cannot relate to itself", "Pass two different issues.");
  const { changed, ...relation } = await changeRelation(ctx, input, "added", async ({ tx }, { source, target, sourceIdent, targetIdent, type }) => {
    // Two identifiers of one issue (an old prefix's and the current one, decision 089); removing such a pair changes nothing.
    if (source.id === target.id) throw invalidInput(`${input.sourceId} and ${input.targetId} are one issue (${source.identifier})`, "Pass two different issues.");
    if (type === "blocks" && (await reaches(tx, target.id, source.id))) {
      throw new DomainError(
        "CYCLE",
        `${sourceIdent} blocking ${targetIdent} would close a dependency cycle: ${targetIdent} already leads to ${sourceIdent}`,
        "Dependencies must form a DAG; remove the opposite edge first or split the work.",
      );
    }
    const existing =
      type === "blocks"
        ? []
        : await tx
            .select({ id: relations.id })
            .from(relations)
            .where(and(eq(relations.type, type), eq(relations.sourceId, target.id), eq(relations.targetId, source.id)));
    if (existing.length > 0) return false;
    const inserted = await tx
      .insert(relations)
      .values({ id: newId(), orgId: ctx.principal.orgId, sourceId: source.id, targetId: target.id, type })
      .onConflictDoNothing()
      .returning({ id: relations.id });
    return inserted.length > 0;
  });
  return { ...relation, added: changed };
}

export async function removeRelation(ctx: Ctx, raw: z.input<typeof relationInput>) {
  const input = relationInput.parse(raw);
  const { changed, ...relation } = await changeRelation(ctx, input, "removed", async ({ tx }, { source, target, type }) => {
    const pairs = type === "blocks" ? [[source.id, target.id]] : [[source.id, target.id], [target.id, source.id]];
    let removed = 0;
    for (const [s, t] of pairs) {
      const deleted = await tx
        .delete(relations)
        .where(and(eq(relations.sourceId, s!), eq(relations.targetId, t!), eq(relations.type, type)))
        .returning({ id: relations.id });
      removed += deleted.length;
    }
    return removed > 0;
  });
  return { ...relation, removed: changed };
}
