import { and, eq, gt, isNull } from "drizzle-orm";
import { z } from "zod";
import { orgs, projects, setupCodes } from "../../db/schema/index.ts";
import type { Ctx, Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { randomToken, sha256 } from "../crypto/index.ts";
import { DomainError, forbidden, notFound } from "../errors.ts";
import { chargeOrgAction } from "../usage/meter.ts";
import { projectReach, reachable } from "./scope.ts";
import { actorOf, humanPrincipal, membershipOf, recordOrgActivity } from "./access.ts";
import { newId, runtimeSchema } from "./fields.ts";
import { mintAgentKey } from "./mint-key.ts";

/**
 * Setup codes (`rtscsetup_...`): a signed-in person asks the Dash for one, pastes it to an
 * agent on a headless machine, and `retasc bind --setup <code>` trades it, once and within
 * ten minutes, for an agent key of that person in that org and project. No sign-in on the
 * agent's side: the Dash session already proved who the person is.
 */
export const SETUP_PREFIX = "rtscsetup_";
export const SETUP_CODE_TTL_MS = 10 * 60_000;

export const createSetupCodeInput = z.object({
  projectId: z.string().trim().min(1, "projectId is required").max(100),
  runtime: runtimeSchema.default("claude-code"),
});
export const redeemSetupCodeInput = z.object({
  code: z
    .string()
    .trim()
    .regex(/^rtscsetup_[A-Za-z0-9_-]{16,100}$/, "a setup code looks like rtscsetup_…"),
  /** Overrides the runtime label chosen in the Dash. */
  runtime: runtimeSchema.optional(),
});

/** Any active member may issue a setup code for their own agent. */
export async function createSetupCode(ctx: Ctx, raw: z.input<typeof createSetupCodeInput>) {
  const input = createSetupCodeInput.parse(raw);
  return ctx.db.transaction(async (tx) => {
    const actor = await actorOf(ctx, tx);
    const project = await tx
      .select({ id: projects.id, prefix: projects.prefix })
      .from(projects)
      .where(and(eq(projects.id, input.projectId), reachable(ctx.principal, projectReach)));
    if (!project[0]) throw notFound("project");
    const code = randomToken(SETUP_PREFIX, 24);
    const expiresAt = new Date(ctx.clock.now().getTime() + SETUP_CODE_TTL_MS);
    const setupId = newId();
    await tx.insert(setupCodes).values({
      id: setupId,
      orgId: ctx.principal.orgId,
      projectId: input.projectId,
      userId: actor.userId,
      runtime: input.runtime,
      codeHash: sha256(code),
      createdAt: ctx.clock.now(),
      expiresAt,
    });
    await recordOrgActivity(ctx, tx, "setup_code.created", { setupId, projectId: input.projectId });
    await chargeOrgAction(tx, ctx, "create_setup_code");
    return { code, expiresAt: expiresAt.toISOString(), projectPrefix: project[0].prefix };
  });
}

/** Trades a setup code for an agent key; exactly once, before it expires. */
export async function redeemSetupCode(services: Services, raw: z.input<typeof redeemSetupCodeInput>) {
  const input = redeemSetupCodeInput.parse(raw);
  const now = services.clock.now();
  return services.db.transaction(async (tx) => {
    const rows = await tx
      .update(setupCodes)
      .set({ usedAt: now })
      .where(and(eq(setupCodes.codeHash, sha256(input.code)), isNull(setupCodes.usedAt), gt(setupCodes.expiresAt, now)))
      .returning();
    const setup = rows[0];
    if (!setup) {
      const known = (await tx.select().from(setupCodes).where(eq(setupCodes.codeHash, sha256(input.code))))[0];
      const hint = "Get a fresh setup code from the Dash (Settings → Keys).";
      if (!known) throw notFound("setup code", hint);
      if (known.usedAt) throw new DomainError("CONFLICT", "this setup code was already used; setup codes work once", hint, { reason: "used" });
      throw new DomainError("FORBIDDEN", "this setup code expired; they last ten minutes", hint, { reason: "expired" });
    }
    const holder = await membershipOf(tx, setup.orgId, setup.userId);
    if (holder?.status !== "active") {
      throw forbidden("the person who issued this setup code is no longer an active member", "Ask an owner or admin of the org.");
    }
    const runtime = input.runtime ?? setup.runtime;
    const minted = await mintAgentKey(tx, { orgId: setup.orgId, userId: setup.userId, projectId: setup.projectId, runtime });
    await tx.update(setupCodes).set({ keyId: minted.keyId }).where(eq(setupCodes.id, setup.id));
    const ctx = withPrincipal(services, humanPrincipal(setup.orgId, setup.userId, "cli", null, holder.orgFrozen));
    await recordOrgActivity(ctx, tx, "key.minted", { keyId: minted.keyId, runtime, via: "setup_code" });
    const org = (await tx.select({ name: orgs.name }).from(orgs).where(eq(orgs.id, setup.orgId)))[0]!;
    const project = (await tx.select({ prefix: projects.prefix, name: projects.name }).from(projects).where(eq(projects.id, setup.projectId)))[0]!;
    return {
      key: minted.key,
      keyId: minted.keyId,
      orgId: setup.orgId,
      orgName: org.name,
      projectId: setup.projectId,
      projectName: project.name,
      prefix: project.prefix,
      runtime,
      userId: setup.userId,
    };
  });
}
