import { and, desc, eq, sql } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../../db/client.ts";
import { importCredentials, user } from "../../../db/schema/index.ts";
import type { Ctx } from "../../context.ts";
import type { OrgCipher } from "../../crypto/index.ts";
import { notFound } from "../../errors.ts";
import { actorOf, requireRole } from "../../orgs/access.ts";
import { importSourceNames, type SourceMapping } from "./stream.ts";

/**
 * A source's credential kept for importing again (decision 094). Only when the owner or admin who
 * starts an import asks (`keepCredential: true`). It is sealed under the org's key in the run's
 * own transaction, and is read back only by `importAgain` (../again.ts). No read returns it, and
 * it goes with `forgetImportCredential` or with the org.
 */
export const keepCredentialInput = {
  keepCredential: z.boolean().optional().describe("keep the credential, sealed under the org's key, to import again later"),
};

export interface KeptCredential {
  /** The source's credential as `runImport` (../sources.ts) takes it: the token, and Jira's site and email. */
  credential: { token: string; site?: string; email?: string };
  mapping?: SourceMapping;
}

export const sourceRefInput = z.object({
  source: z.enum(importSourceNames, { error: `source is one of ${importSourceNames.join(", ")}` }),
  sourceId: z.string({ error: "sourceId is required" }).trim().min(1, "sourceId is required").max(500),
});
export type SourceRef = z.output<typeof sourceRefInput>;

/** Keeps (or replaces) the credential a run was started with; inside that run's transaction. */
export async function keepCredential(tx: Db, cipher: OrgCipher, row: { orgId: string; source: string; sourceId: string; keptBy: string | null; now: Date }, kept: KeptCredential): Promise<void> {
  const values = { credentialEnc: cipher.encrypt(JSON.stringify(kept.credential))!, mapping: kept.mapping ? JSON.stringify(kept.mapping) : null, keptBy: row.keptBy, createdAt: row.now, usedAt: null };
  await tx
    .insert(importCredentials)
    .values({ orgId: row.orgId, source: row.source, sourceId: row.sourceId, ...values })
    .onConflictDoUpdate({ target: [importCredentials.orgId, importCredentials.source, importCredentials.sourceId], set: values });
}

/** The org's kept credentials, without the credentials: what each reads, who kept it and when, when it was last used. */
export async function listKeptCredentials(ctx: Ctx) {
  requireRole(await actorOf(ctx), ["owner", "admin"], "seeing kept import credentials");
  const rows = await ctx.db
    .select({ source: importCredentials.source, sourceId: importCredentials.sourceId, keptBy: user.name, createdAt: importCredentials.createdAt, usedAt: importCredentials.usedAt })
    .from(importCredentials)
    .leftJoin(user, eq(user.id, importCredentials.keptBy))
    .where(eq(importCredentials.orgId, ctx.principal.orgId))
    .orderBy(desc(importCredentials.createdAt));
  return rows.map((r) => ({ source: r.source, sourceId: r.sourceId, keptBy: r.keptBy, keptAt: r.createdAt.toISOString(), usedAt: r.usedAt?.toISOString() ?? null }));
}

/** Removes a kept credential (owners and admins). */
export async function forgetImportCredential(ctx: Ctx, raw: z.input<typeof sourceRefInput>) {
  const input = sourceRefInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "forgetting an import credential");
  const gone = await ctx.db
    .delete(importCredentials)
    .where(and(eq(importCredentials.orgId, ctx.principal.orgId), eq(importCredentials.source, input.source), eq(importCredentials.sourceId, input.sourceId)))
    .returning({ source: importCredentials.source });
  if (gone.length === 0) throw notFound(`a kept ${input.source} credential for ${input.sourceId}`, "listKeptCredentials names the ones kept.");
  return { forgotten: true, ...input };
}

/** The kept credential, opened, with its use noted (the role is the caller's to check). */
export async function openKeptCredential(ctx: Ctx, ref: SourceRef): Promise<KeptCredential> {
  const [row] = await ctx.db
    .update(importCredentials)
    .set({ usedAt: sql`now()` })
    .where(and(eq(importCredentials.orgId, ctx.principal.orgId), eq(importCredentials.source, ref.source), eq(importCredentials.sourceId, ref.sourceId)))
    .returning({ credentialEnc: importCredentials.credentialEnc, mapping: importCredentials.mapping });
  if (!row) throw notFound(`a kept ${ref.source} credential for ${ref.sourceId}`, "Import with the credential and keepCredential: true to keep it; listKeptCredentials names the ones kept.");
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  return { credential: JSON.parse(cipher.decrypt(row.credentialEnc)!) as KeptCredential["credential"], ...(row.mapping ? { mapping: JSON.parse(row.mapping) as SourceMapping } : {}) };
}
