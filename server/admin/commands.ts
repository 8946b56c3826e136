import { and, eq } from "drizzle-orm";
import { z } from "zod";
import type { Services } from "../context.ts";
import { projects, user } from "../../db/schema/index.ts";
import { createAuth } from "../auth/index.ts";
import { DomainError, invalidInput, notFound } from "../errors.ts";
import {
  createOrg,
  createProject,
  emailSchema,
  ensureMember,
  ensureUser,
  mintAgentKey,
  prefixSchema,
  runtimeSchema,
} from "../orgs/index.ts";
import { requireLiveOrg } from "../orgs/delete.ts";
import { addCredit, balanceOf } from "../usage/credit.ts";

export const bootstrapInput = z.object({
  org: z.string().trim().min(1, "--org is required"),
  project: z.string().trim().min(1, "--project is required"),
  prefix: prefixSchema,
  email: emailSchema,
  runtime: runtimeSchema.default("admin"),
});

/** Creates an org, its owner, a project and a first agent key, in one transaction. */
export async function bootstrap(services: Services, raw: z.input<typeof bootstrapInput>) {
  const input = bootstrapInput.parse(raw);
  return services.db.transaction(async (tx) => {
    const userId = await ensureUser(tx, input.email);
    const orgId = await createOrg(services, tx, { name: input.org, ownerUserId: userId });
    const project = await createProject(tx, { orgId, name: input.project, prefix: input.prefix });
    const { key } = await mintAgentKey(tx, { orgId, userId, projectId: project.id, runtime: input.runtime });
    return { orgId, projectId: project.id, userId, key };
  });
}

export const mintKeyInput = z.object({
  org: z.string().trim().min(1, "--org is required"),
  email: emailSchema,
  runtime: runtimeSchema,
  project: z.string().trim().min(1).optional(),
  /** A CI key for the project (decision 045): attests verification results and nothing else. */
  ci: z.boolean().optional(),
});

/** Mints a key for a person in an org, adding them as a member if needed. */
export async function mintKey(services: Services, raw: z.input<typeof mintKeyInput>) {
  const input = mintKeyInput.parse(raw);
  return services.db.transaction(async (tx) => {
    await requireLiveOrg(tx, input.org);
    let projectId: string | null = null;
    if (input.project) {
      const project = await tx
        .select({ id: projects.id })
        .from(projects)
        .where(and(eq(projects.orgId, input.org), eq(projects.id, input.project)));
      if (!project[0]) {
        throw new DomainError("NOT_FOUND", `project ${input.project} not found in this org`, "Pass a projectId of this org.");
      }
      projectId = project[0].id;
    } else {
      const first = await tx
        .select({ id: projects.id })
        .from(projects)
        .where(eq(projects.orgId, input.org))
        .orderBy(projects.createdAt)
        .limit(1);
      projectId = first[0]?.id ?? null;
    }
    const userId = await ensureUser(tx, input.email);
    await ensureMember(tx, input.org, userId);
    const { key } = await mintAgentKey(tx, { orgId: input.org, userId, projectId, runtime: input.runtime, ci: input.ci });
    return { userId, key, ...(input.ci ? { ci: true, projectId } : {}) };
  });
}

export const setPasswordInput = z.object({
  email: emailSchema,
  password: z.string(),
});

/**
 * Sets or replaces a person's email + password credential. The hash, the length rules and the
 * account row are better-auth's own (the configured instance's context), exactly as sign-up
 * writes them, so a normal sign-in then works.
 */
export async function setPassword(services: Services, raw: z.input<typeof setPasswordInput>) {
  const input = setPasswordInput.parse(raw);
  if (!services.config.emailPassword) {
    throw new DomainError(
      "UNAVAILABLE",
      "email + password sign-in is off in this deployment",
      "Set RETASC_EMAIL_PASSWORD=on, or sign in with GitHub or Google.",
    );
  }
  const auth = await createAuth(services).$context;
  const { minPasswordLength, maxPasswordLength } = auth.password.config;
  if (input.password.length < minPasswordLength || input.password.length > maxPasswordLength) {
    throw invalidInput(
      `the password must be ${minPasswordLength} to ${maxPasswordLength} characters`,
      "Sign-up enforces the same lengths.",
    );
  }
  const found = await services.db.select({ id: user.id }).from(user).where(eq(user.email, input.email));
  const userId = found[0]?.id;
  if (!userId) throw notFound(`person ${input.email}`, "Check the email; bootstrap or mint-key creates a person.");
  const hash = await auth.password.hash(input.password);
  const existing = await auth.internalAdapter.findCredentialAccount(userId);
  if (existing) await auth.internalAdapter.updateAccount(existing.id, { password: hash });
  else await auth.internalAdapter.linkAccount({ userId, providerId: "credential", accountId: userId, password: hash });
  const replaced = Boolean(existing?.password);
  // A reset often follows a leak: whoever signed in with the old password is signed out (browser and CLI sessions alike).
  if (replaced) await auth.internalAdapter.deleteUserSessions(userId);
  return { userId, email: input.email, replaced, signedOut: replaced };
}

export const grantCreditInput = z.object({
  org: z.string().trim().min(1, "--org is required"),
  "micro-credits": z.coerce
    .number({ error: "--micro-credits must be a number" })
    .int("--micro-credits must be a whole number")
    .min(1, "--micro-credits must be at least 1")
    .max(1_000_000_000_000, "--micro-credits must be at most 1,000,000,000,000 ($1,000,000)"),
  note: z
    .string({ error: "--note is required (why the credit is given)" })
    .trim()
    .min(1, "--note is required (why the credit is given)")
    .max(500),
});

/** A support credit: given credit (spent before bought), recorded with the operator's note. */
export async function grantCredit(services: Services, raw: z.input<typeof grantCreditInput>) {
  const input = grantCreditInput.parse(raw);
  return services.db.transaction(async (tx) => {
    await requireLiveOrg(tx, input.org);
    const ref = crypto.randomUUID();
    const microCredits = input["micro-credits"];
    await addCredit(tx, { orgId: input.org, kind: "given", microCredits, source: "grant", ref, note: input.note, at: services.clock.now() });
    return { orgId: input.org, microCredits, note: input.note, ref, ...(await balanceOf(tx, input.org)) };
  });
}
