import { asc, eq } from "drizzle-orm";
import { z } from "zod";
import { members, orgs } from "../../db/schema/index.ts";
import type { Ctx, Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { actorOf, humanPrincipal, recordOrgActivity, requireRole } from "./access.ts";
import { prefixSchema } from "./fields.ts";
import { createOrg } from "./org-rows.ts";
import { createProject } from "./prefixes.ts";

/** A signed-in person's orgs and projects: what the Dash's switcher and `retasc bind` pick from. */
export const createOrgInput = z.object({
  name: z.string().trim().min(1, "an org needs a name").max(100),
  timeZone: z.string().trim().min(1).max(64).optional(),
});
export const createProjectInput = z.object({
  name: z.string().trim().min(1, "a project needs a name").max(100),
  prefix: prefixSchema,
});

export async function listOrgsOf(services: Pick<Services, "db">, userId: string) {
  const rows = await services.db
    .select({ orgId: orgs.id, name: orgs.name, role: members.role, status: members.status, memberId: members.id })
    .from(members)
    .innerJoin(orgs, eq(orgs.id, members.orgId))
    .where(eq(members.userId, userId))
    .orderBy(asc(orgs.name), asc(orgs.id));
  return { orgs: rows };
}

/** Creates an org with the caller as its owner. */
export async function createOrgFor(
  services: Services,
  userId: string,
  raw: z.input<typeof createOrgInput>,
  via: "dash" | "cli" = "cli",
) {
  const input = createOrgInput.parse(raw);
  return services.db.transaction(async (tx) => {
    const orgId = await createOrg(services, tx, { name: input.name, ownerUserId: userId, timeZone: input.timeZone });
    const ctx = withPrincipal(services, humanPrincipal(orgId, userId, via));
    await recordOrgActivity(ctx, tx, "org.created", { name: input.name });
    return { orgId, name: input.name, role: "owner" as const };
  });
}

/** Creates a project (owner or admin). The prefix names every issue: PFX-1, PFX-2, … */
export async function addProject(ctx: Ctx, raw: z.input<typeof createProjectInput>) {
  const input = createProjectInput.parse(raw);
  return ctx.db.transaction(async (tx) => {
    const actor = await actorOf(ctx, tx);
    requireRole(actor, ["owner", "admin"], "creating a project");
    const project = await createProject(tx, { orgId: ctx.principal.orgId, name: input.name, prefix: input.prefix });
    await recordOrgActivity(ctx, tx, "project.created", { projectId: project.id, prefix: project.prefix });
    return { projectId: project.id, name: input.name, prefix: project.prefix };
  });
}
