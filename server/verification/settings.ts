import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { projects, verificationModes } from "../../db/schema/index.ts";
import { systemPrincipal, type Ctx, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { invalidInput, notFound } from "../errors.ts";
import { actorOf, recordOrgActivity, requireRole } from "../orgs/access.ts";

const checkName = z.string().trim().min(1).max(200);
const minutes = z.coerce.number().int().min(1).max(7 * 24 * 60);

/** A project's verification settings as stored, exported and imported. */
export const verificationSettings = z.object({
  mode: z.enum(verificationModes),
  checks: z.array(checkName).max(50),
  windowMinutes: minutes,
  stallMinutes: minutes,
  /** Claims abandoned in a row after which an issue is quarantined (decision 055); absent in older exports: 3. */
  quarantineAfter: z.coerce.number().int().min(1).max(100).default(3),
  /** Whether the stall sweep releases stalled claims (decision 062); absent in older exports: false. */
  releaseStalled: z.boolean().default(false),
});
export type VerificationSettings = z.infer<typeof verificationSettings>;

/** A project's verification settings as every door sends them (decision 045). */
export const setVerificationInput = z.object({
  projectId: z.string().trim().min(1, "the project's id is required").max(100),
  mode: z.enum(verificationModes),
  /** The required checks; [] or omitted: every check reported on the commit. A comma list is split. */
  checks: z
    .union([z.array(checkName).max(50), z.string().max(5000)])
    .transform((v) => (typeof v === "string" ? v.split(",").map((c) => c.trim()).filter(Boolean) : v))
    .pipe(z.array(checkName).max(50))
    .optional(),
  windowMinutes: minutes.optional(),
  /** A live claim with no checkpoint, comment or status write for this long reads stalled in check_claim. */
  stallMinutes: minutes.optional(),
  /** Claims abandoned in a row (lapsed or released, no checkpoint) after which an issue is quarantined (decision 055). */
  quarantineAfter: z.coerce.number().int().min(1).max(100).optional(),
  /** Whether a stalled claim is released by the stall sweep, as its holder's release would be, rather than only marked (decision 062). */
  releaseStalled: z.union([z.boolean(), z.enum(["true", "false", "on", "off"]).transform((v) => v === "true" || v === "on")]).optional(),
});

export type SetVerificationInput = z.input<typeof setVerificationInput>;

/** Sets how a project verifies finishes: owners and admins, or an operator. */
export async function setVerification(ctx: Ctx, raw: SetVerificationInput) {
  const input = setVerificationInput.parse(raw);
  return ctx.db.transaction(async (tx) => {
    requireRole(await actorOf(ctx, tx), ["owner", "admin"], "changing how a project verifies finishes");
    const [row] = await tx
      .update(projects)
      .set({
        verificationMode: input.mode,
        ...(input.checks !== undefined ? { verificationChecks: input.checks } : {}),
        ...(input.windowMinutes !== undefined ? { verificationWindowMinutes: input.windowMinutes } : {}),
        ...(input.stallMinutes !== undefined ? { stallMinutes: input.stallMinutes } : {}),
        ...(input.quarantineAfter !== undefined ? { quarantineAfter: input.quarantineAfter } : {}),
        ...(input.releaseStalled !== undefined ? { releaseStalled: input.releaseStalled } : {}),
      })
      .where(and(eq(projects.id, input.projectId), eq(projects.orgId, ctx.principal.orgId)))
      .returning({ projectId: projects.id, prefix: projects.prefix, mode: projects.verificationMode, checks: projects.verificationChecks, windowMinutes: projects.verificationWindowMinutes, stallMinutes: projects.stallMinutes, quarantineAfter: projects.quarantineAfter, releaseStalled: projects.releaseStalled });
    if (!row) throw notFound(`project ${input.projectId}`, "Pass a project id of this org (`retasc project list`).");
    await recordOrgActivity(ctx, tx, "project.verification", { ...row });
    return row;
  });
}

/** Every project's verification settings, for the Dash's Projects page. */
export async function listVerificationSettings(ctx: Ctx) {
  return ctx.db
    .select({ projectId: projects.id, mode: projects.verificationMode, checks: projects.verificationChecks, windowMinutes: projects.verificationWindowMinutes, stallMinutes: projects.stallMinutes, quarantineAfter: projects.quarantineAfter, releaseStalled: projects.releaseStalled })
    .from(projects)
    .where(eq(projects.orgId, ctx.principal.orgId));
}

/** `npm run admin -- set-verification --project <id> --mode ci|off [--checks a,b] [--window-minutes N] [--stall-minutes N] [--quarantine-after N] [--release-stalled | --no-release-stalled]`: as the operator. */
export async function setVerificationCommand(services: Services, argv: Record<string, unknown>) {
  const projectId = z.string().trim().min(1, "--project is required").parse(argv.project);
  const [project] = await services.db.select({ orgId: projects.orgId }).from(projects).where(eq(projects.id, projectId));
  if (!project) throw notFound(`project ${projectId}`, "Pass a project's id.");
  return setVerification(withPrincipal(services, systemPrincipal(project.orgId)), {
    projectId,
    mode: argv.mode as "ci" | "off",
    ...(argv.checks !== undefined ? { checks: String(argv.checks) } : {}),
    ...(argv["window-minutes"] !== undefined ? { windowMinutes: Number(argv["window-minutes"]) } : {}),
    ...(argv["stall-minutes"] !== undefined ? { stallMinutes: Number(argv["stall-minutes"]) } : {}),
    ...(argv["quarantine-after"] !== undefined ? { quarantineAfter: Number(argv["quarantine-after"]) } : {}),
    ...releaseStalledFlag(argv["release-stalled"], argv["no-release-stalled"]),
  });
}

/** `--release-stalled` / `--no-release-stalled` (the CLI's and the admin command's flags) as the input's field; neither: unchanged. */
export function releaseStalledFlag(on: unknown, off: unknown): { releaseStalled?: boolean } {
  if (on && off) throw invalidInput("--release-stalled and --no-release-stalled contradict each other", "Pass one of them.");
  return on ? { releaseStalled: true } : off ? { releaseStalled: false } : {};
}
