import { eq } from "drizzle-orm";
import { z } from "zod";
import { orgs, type MemberRole } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { forbidden, notFound } from "../errors.ts";
import { actorOf, recordOrgActivity, requireRole, type Membership } from "./access.ts";

/**
 * The org's settings that decide who may do what (decision 043). Exporting hands out every
 * decrypted row of the org, so it is the owners' unless an owner lets admins do it too.
 */
export const setAdminsMayExportInput = z.object({ allowed: z.boolean() });

export async function orgSettings(ctx: Ctx): Promise<{ adminsMayExport: boolean }> {
  await actorOf(ctx);
  const [org] = await ctx.db.select({ adminsMayExport: orgs.adminsMayExport }).from(orgs).where(eq(orgs.id, ctx.principal.orgId));
  if (!org) throw notFound("org");
  return org;
}

/** Lets admins export the org, or stops them. Owner only. */
export async function setAdminsMayExport(ctx: Ctx, raw: z.input<typeof setAdminsMayExportInput>) {
  const { allowed } = setAdminsMayExportInput.parse(raw);
  return ctx.db.transaction(async (tx) => {
    requireRole(await actorOf(ctx, tx), ["owner"], "letting admins export the org");
    await tx.update(orgs).set({ adminsMayExport: allowed }).where(eq(orgs.id, ctx.principal.orgId));
    await recordOrgActivity(ctx, tx, "org.settings_changed", { adminsMayExport: allowed });
    return { adminsMayExport: allowed };
  });
}

/** Whether a member of `role` may export the org under its `settings`: an owner, or an admin where an owner allows it. */
export const mayExport = (role: MemberRole, settings: { adminsMayExport: boolean }): boolean =>
  role === "owner" || (role === "admin" && settings.adminsMayExport);

/** Refuses an `actor` who may not export the org (operators act as owners). */
export async function requireExporter(ctx: Ctx, actor: Membership): Promise<void> {
  if (actor.role === "member") requireRole(actor, ["owner"], "exporting the org");
  const [org] = await ctx.db.select({ adminsMayExport: orgs.adminsMayExport }).from(orgs).where(eq(orgs.id, ctx.principal.orgId));
  if (!mayExport(actor.role, { adminsMayExport: org?.adminsMayExport ?? false })) {
    throw forbidden("exporting the org is the owners'; an owner has not let admins export it", "Ask an owner to export it, or to let admins export in Settings › Import & export.");
  }
}
