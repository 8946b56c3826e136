import { eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { issues, projects } from "../../db/schema/index.ts";
import { DomainError, invalidInput } from "../errors.ts";
import type { SaveInput } from "./schemas.ts";
import type { WriteScope } from "./store.ts";
import type { IssueRow } from "./types.ts";

/** A project's verification settings (decision 045). */
export async function projectVerification(db: Db, projectId: string) {
  const [row] = await db
    .select({ mode: projects.verificationMode, checks: projects.verificationChecks, windowMinutes: projects.verificationWindowMinutes })
    .from(projects)
    .where(eq(projects.id, projectId));
  return row!;
}
export type ProjectVerification = Awaited<ReturnType<typeof projectVerification>>;

const evidenceHint =
  'Send what you delivered with the finish: save_issue {"identifier":"…","claimToken":"…","status":"done","evidence":{"commit":"<git rev-parse HEAD>","branch":"<your branch>","pr":"<request number or URL, if any>"}}. ' +
  "Push the commit first: CI verifies it before anything that waits on this issue starts.";

/**
 * What a finish (done or review, ending the caller's lease) writes of its evidence and its
 * verification. With verification on, a done needs a commit or a request (sent now, or sent
 * when it went to review) and leaves the issue pending: its dependents stay blocked until CI
 * passes it (server/verification).
 */
export async function finishEvidence(scope: WriteScope, row: IssueRow, input: SaveInput, to: string): Promise<Partial<typeof issues.$inferInsert>> {
  const sent = input.evidence;
  const patch: Partial<typeof issues.$inferInsert> = sent
    ? { evidenceCommit: sent.commit ?? null, evidenceBranch: sent.branch ?? null, evidencePr: sent.pr ?? null }
    : {};
  if (to !== "done") return patch;
  const settings = await projectVerification(scope.tx, row.projectId);
  if (settings.mode === "off") return patch;
  const kept = row.status === "review" && !sent;
  const commit = kept ? row.evidenceCommit : (sent?.commit ?? null);
  const pr = kept ? row.evidencePr : (sent?.pr ?? null);
  if (!commit && !pr) {
    throw new DomainError("EVIDENCE_REQUIRED", `${row.identifier}'s project verifies finishes in CI: a done needs the commit or the request it delivered`, evidenceHint, {
      identifier: row.identifier,
    });
  }
  return { ...patch, verification: "pending", verificationAt: scope.now, verificationStaleAt: new Date(scope.now.getTime() + settings.windowMinutes * 60_000) };
}

/** Evidence is part of a finish, never sent alone. */
export function checkEvidenceGoesWithFinish(input: SaveInput, to: string) {
  if (input.evidence && to !== "done" && to !== "review") {
    throw invalidInput("evidence goes with a finish", 'Pass status:"done" (or "review") and your claimToken with it.');
  }
}
