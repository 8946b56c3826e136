import { checkpoints } from "../../db/schema/index.ts";
import { DomainError, invalidInput } from "../errors.ts";
import { newId } from "../orgs/index.ts";
import type { SaveInput } from "./schemas.ts";
import { latestCheckpoint } from "./lookups.ts";
import { type WriteScope } from "./store.ts";
import type { IssueRow } from "./types.ts";

export const NOTE_FIELDS = ["done", "next", "gotchas", "note", "branch"] as const;
export type Notes = Partial<Record<(typeof NOTE_FIELDS)[number], string>>;

/**
 * Checkpoints merge: a field left out keeps the latest checkpoint's value (an empty string
 * clears it), so a note alone never erases the handoff. The free note belongs to its checkpoint.
 */
export async function writeCheckpoint(scope: WriteScope, row: IssueRow, notes: Notes) {
  const { tx, ctx, now, cipher } = scope;
  const previous = await latestCheckpoint(tx, row.id);
  const merged = (sent: string | undefined, kept: string | null | undefined) =>
    sent !== undefined ? cipher.encrypt(sent || null) : (kept ?? null);
  await tx.insert(checkpoints).values({
    id: newId(),
    orgId: ctx.principal.orgId,
    issueId: row.id,
    leaseId: row.leaseId,
    userId: ctx.principal.userId,
    keyId: ctx.principal.keyId,
    runtime: ctx.principal.runtime,
    doneEnc: merged(notes.done, previous?.doneEnc),
    nextEnc: merged(notes.next, previous?.nextEnc),
    gotchasEnc: merged(notes.gotchas, previous?.gotchasEnc),
    noteEnc: cipher.encrypt(notes.note || null),
    branch: notes.branch ?? previous?.branch ?? null,
    // Strictly after the previous one (same millisecond, or another instance's clock behind),
    // so "latest" is always the last written; the issue's row lock serialises these writes.
    createdAt: previous && previous.createdAt.getTime() >= now.getTime() ? new Date(previous.createdAt.getTime() + 1) : now,
  });
}

/**
 * Entering review hands the work to a reviewer (decision 073): what was built and where
 * (branch, request, commit) goes with it as `handoff`, stored as the checkpoint's `done`,
 * unless the latest checkpoint already says what is done. Valid on that write only.
 */
export async function checkHandoff(scope: WriteScope, row: IssueRow, input: SaveInput, entersReview: boolean): Promise<void> {
  if (input.handoff === undefined) {
    if (!entersReview) return;
    const latest = await latestCheckpoint(scope.tx, row.id);
    if (latest && scope.cipher.decrypt(latest.doneEnc)) return;
    throw new DomainError(
      "HANDOFF_REQUIRED",
      `${row.identifier} enters review with nothing saying what was built: pass handoff`,
      `Call save_issue again with handoff: what you built and where the reviewer finds it, e.g. handoff:"Login redirect fixed; branch ${row.identifier.toLowerCase()}/fix-login, PR #12, commit 3f2a9c1; tests in auth.test.ts".`,
      { identifier: row.identifier },
    );
  }
  if (!entersReview) throw invalidInput("handoff goes with entering review", 'Pass status:"review" with your claimToken and a reviewer as assignee; otherwise record notes with checkpoint.');
}
