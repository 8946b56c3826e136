import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { intakeHeld } from "../../db/schema/index.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { sha256 } from "../crypto/index.ts";
import { newId } from "../orgs/index.ts";

/**
 * Outsiders' text held for a person (docs/decisions/038-outsiders-text-waits-for-a-person.md):
 * what intake stores instead of handing it to the issue or its thread, and the digest a person's
 * acceptance carries. Only server/intake/triage.ts reads it back, for people's doors.
 */

/** The SHA-256 (hex) of the text a person is shown and signs: an issue's title and body, or a comment's body. */
export const textDigest = (text: HeldText) => sha256(JSON.stringify(text.kind === "issue" ? [text.title, text.body] : [text.body]));

export type HeldText = { kind: "issue"; author: string; title: string; body: string } | { kind: "comment"; author: string; body: string };

/** What an item filed from outside reads as while its text is held: no word of the outsider's. */
export const heldTitle = (where: string, what: string) => `Held for triage: ${where} ${what}`.slice(0, 500);
export const HELD_BODY =
  "Filed from outside the team. Its text is held until a person reads and accepts it on the Dash or with `retasc triage`; until then no agent is handed it or its text.";

/** Holds `text` for the item `issueId`, replacing what was held for the same source. */
export async function holdText(
  tx: Db,
  cipher: OrgCipher,
  held: { orgId: string; connectorId: string; issueId: string; sourceId: string; reason: "filed" | "edited"; now: Date },
  text: HeldText,
): Promise<void> {
  const { kind, ...content } = text;
  const textEnc = cipher.encrypt(JSON.stringify(content));
  await tx
    .insert(intakeHeld)
    .values({ id: newId(), orgId: held.orgId, connectorId: held.connectorId, issueId: held.issueId, kind, sourceId: held.sourceId, textEnc, reason: held.reason, receivedAt: held.now })
    .onConflictDoUpdate({ target: [intakeHeld.connectorId, intakeHeld.kind, intakeHeld.sourceId], set: { textEnc, issueId: held.issueId, reason: held.reason, receivedAt: held.now } });
}

/** Drops what is held for a source (its text went back to what a person signed, or the team took it over). */
export async function dropHeld(tx: Db, connectorId: string, kind: "issue" | "comment", sourceId: string): Promise<boolean> {
  const dropped = await tx
    .delete(intakeHeld)
    .where(and(eq(intakeHeld.connectorId, connectorId), eq(intakeHeld.kind, kind), eq(intakeHeld.sourceId, sourceId)))
    .returning({ id: intakeHeld.id });
  return dropped.length > 0;
}

/** Whether anything is held for a source. */
export async function isHeld(tx: Db, connectorId: string, kind: "issue" | "comment", sourceId: string): Promise<{ reason: "filed" | "edited" } | null> {
  const [row] = await tx
    .select({ reason: intakeHeld.reason })
    .from(intakeHeld)
    .where(and(eq(intakeHeld.connectorId, connectorId), eq(intakeHeld.kind, kind), eq(intakeHeld.sourceId, sourceId)));
  return row ?? null;
}

/** A held row's text, decrypted. */
export function heldTextOf(cipher: OrgCipher, row: { kind: "issue" | "comment"; textEnc: string }): HeldText {
  const content = JSON.parse(cipher.decrypt(row.textEnc)) as { author: string; title?: string; body: string };
  return row.kind === "issue" ? { kind: "issue", author: content.author, title: content.title ?? "", body: content.body } : { kind: "comment", author: content.author, body: content.body };
}
