import { and, asc, eq } from "drizzle-orm";
import { members, user } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";

/** People who can be assigned (a lane or a reviewer): the org's active members. */
export function activeMembers(ctx: Ctx) {
  return ctx.db
    .select({ userId: user.id, email: user.email, name: user.name })
    .from(members)
    .innerJoin(user, eq(user.id, members.userId))
    .where(and(eq(members.orgId, ctx.principal.orgId), eq(members.status, "active")))
    .orderBy(asc(user.email));
}
