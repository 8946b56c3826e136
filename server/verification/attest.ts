import { z } from "zod";
import type { Ctx } from "../context.ts";
import { DomainError, forbidden, notFound } from "../errors.ts";
import { commitShaSchema, identifierSchema } from "../issues/schemas.ts";
import { findIssue } from "../issues/lookups.ts";
import { inTransaction } from "../issues/store.ts";
import { actorOf } from "../orgs/access.ts";
import { recordReports } from "./settle.ts";

const url = z.url({ protocol: /^https?$/, error: "the run's URL is an http(s) link" }).max(2000);

/** `retasc verify <identifier> --commit <sha> --status pass|fail --check <name> [--url <run>]`. */
export const attestInput = z.object({
  identifier: identifierSchema,
  commit: commitShaSchema,
  status: z.enum(["pass", "fail"]),
  check: z.string().trim().min(1).max(200),
  url: url.optional(),
});

/**
 * A CI key's attestation: one check's result for a finish of its project awaiting
 * verification, counted as a connector's report is. The key's project bounds it: an issue of
 * another project is not found.
 */
export type AttestInput = z.input<typeof attestInput>;

export async function attestVerification(ctx: Ctx & { principal: { projectId: string } }, raw: AttestInput) {
  const input = attestInput.parse(raw);
  return inTransaction(ctx, async (scope) => {
    const row = await findIssue(scope.tx, ctx.principal, input.identifier).catch(() => null);
    if (!row || row.projectId !== ctx.principal.projectId) throw notFound(`issue ${input.identifier} in this CI key's project`, "A CI key attests for its own project's issues.");
    if (row.evidenceCommit && !(input.commit.startsWith(row.evidenceCommit) || row.evidenceCommit.startsWith(input.commit))) {
      throw new DomainError("CONFLICT", `${input.identifier} was finished with commit ${row.evidenceCommit}, not ${input.commit}`, "Attest the run of the commit the finish named.", {
        evidenceCommit: row.evidenceCommit,
      });
    }
    const report = { check: input.check, conclusion: input.status === "pass" ? ("success" as const) : ("failure" as const), url: input.url ?? null, commit: input.commit };
    const outcome = await recordReports(scope, input.identifier, [report], "attested");
    return { identifier: input.identifier, check: input.check, recorded: outcome !== "not_pending", verification: outcome === "not_pending" ? (row.verification ?? "none") : outcome };
  });
}

export const verifyByHandInput = z.object({
  identifier: identifierSchema,
  verdict: z.enum(["passed", "failed"]),
  note: z.string().trim().max(500).optional(),
});

/** A person passes or fails a pending (or stale) verification by hand on the issue page; recorded as theirs. */
export async function verifyByHand(ctx: Ctx, raw: z.input<typeof verifyByHandInput>) {
  const input = verifyByHandInput.parse(raw);
  if (ctx.principal.kind !== "human") throw forbidden("passing or failing a verification by hand is a person's call", "Do it on the issue's page in the Dash.");
  await actorOf(ctx);
  return inTransaction(ctx, async (scope) => {
    const check = input.note ? `by hand: ${input.note}` : "by hand";
    const report = { check, conclusion: input.verdict === "passed" ? ("success" as const) : ("failure" as const), url: null, commit: null };
    const outcome = await recordReports(scope, input.identifier, [report], "person", input.verdict);
    if (outcome === "not_pending") throw new DomainError("CONFLICT", `${input.identifier} is not awaiting verification`, "Only a finish CI has not settled can be passed or failed by hand.");
    return { identifier: input.identifier, verification: outcome };
  });
}
