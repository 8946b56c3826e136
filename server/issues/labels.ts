import type { z } from "zod";
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { issueLabels, labels } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { newId } from "../orgs/index.ts";
import { saveLabelInput } from "./schemas.ts";
import type { WriteScope } from "./store.ts";
import { refuseWhileFrozen } from "../orgs/freeze.ts";
import { chargeOrgAction } from "../usage/meter.ts";

/**
 * Creates a label, or updates its color; idempotent by name. Only a write that changes
 * something is charged: saving a label as it already is costs nothing.
 */
export async function saveLabel(ctx: Ctx, raw: z.input<typeof saveLabelInput>) {
  const input = saveLabelInput.parse(raw);
  const orgId = ctx.principal.orgId;
  refuseWhileFrozen(ctx.principal);
  return ctx.db.transaction(async (tx) => {
    const insert = tx.insert(labels).values({ id: newId(), orgId, name: input.name, color: input.color ?? null });
    const [written] = await (input.color === undefined
      ? insert.onConflictDoNothing()
      : insert.onConflictDoUpdate({
          target: [labels.orgId, labels.name],
          set: { color: input.color },
          setWhere: sql`${labels.color} is distinct from excluded.color`,
        })
    ).returning();
    if (written) await chargeOrgAction(tx, ctx, "save_label");
    const row = written ?? (await tx.select().from(labels).where(and(eq(labels.orgId, orgId), eq(labels.name, input.name))))[0]!;
    return { id: row.id, name: row.name, color: row.color };
  });
}

export async function listLabels(ctx: Ctx) {
  const rows = await ctx.db
    .select({ id: labels.id, name: labels.name, color: labels.color, issues: sql<number>`count(${issueLabels.issueId})::int` })
    .from(labels)
    .leftJoin(issueLabels, eq(issueLabels.labelId, labels.id))
    .where(and(eq(labels.orgId, ctx.principal.orgId)))
    .groupBy(labels.id)
    .orderBy(asc(labels.name));
  return { labels: rows.map((r) => ({ ...r, issues: Number(r.issues) })) };
}

/** Replaces an issue's labels, creating the names the org lacks. */
export async function setLabels(scope: WriteScope, issueId: string, names: string[]) {
  const { tx, ctx } = scope;
  await tx.delete(issueLabels).where(eq(issueLabels.issueId, issueId));
  const unique = [...new Set(names)];
  if (unique.length === 0) return;
  await tx
    .insert(labels)
    .values(unique.map((name) => ({ id: newId(), orgId: ctx.principal.orgId, name })))
    .onConflictDoNothing();
  const rows = await tx
    .select({ id: labels.id })
    .from(labels)
    .where(and(eq(labels.orgId, ctx.principal.orgId), inArray(labels.name, unique)));
  await tx.insert(issueLabels).values(rows.map((l) => ({ orgId: ctx.principal.orgId, issueId, labelId: l.id })));
}
