/** A source's link to its Retasc item: taken under the source's lock, its open state and the newest update applied. */
import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { intakeLinks, issues } from "../../db/schema/index.ts";
import { systemPrincipal, type Ctx, type Services } from "../context.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { withPrincipal } from "../with-principal.ts";
import type { SourceIssue } from "./events.ts";
import type { ConnectorFacts } from "./facts.ts";

/** The link of a source, with what intake decides by: the item's status, triage and text, and what a person signed. */
export interface LockedLink {
  issueId: string;
  identifier: string;
  status: string;
  sourceOpen: boolean;
  triage: "pending" | "accepted" | null;
  titleEnc: string;
  bodyEnc: string | null;
  signedDigestEnc: string | null;
  sourceUpdatedAt: Date | null;
}

/**
 * The system's context inside `tx`, with the source's lock taken and its link (if any) read:
 * every event about one source issue or request is applied one at a time.
 */
export async function lockedLink(services: Services, tx: Db, connector: ConnectorFacts, source: { id: string }): Promise<{ ctx: Ctx; link: LockedLink | undefined; cipher: OrgCipher }> {
  const ctx: Ctx = { ...withPrincipal({ ...services, db: tx }, systemPrincipal(connector.orgId)) };
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`intake:${connector.id}:${source.id}`}))`);
  const [link] = await tx
    .select({
      issueId: intakeLinks.issueId,
      identifier: issues.identifier,
      status: issues.status,
      sourceOpen: intakeLinks.sourceOpen,
      triage: issues.triage,
      titleEnc: issues.titleEnc,
      bodyEnc: issues.bodyEnc,
      signedDigestEnc: intakeLinks.signedDigestEnc,
      sourceUpdatedAt: intakeLinks.sourceUpdatedAt,
    })
    .from(intakeLinks)
    .innerJoin(issues, eq(issues.id, intakeLinks.issueId))
    .where(and(eq(intakeLinks.connectorId, connector.id), eq(intakeLinks.sourceId, source.id)));
  return { ctx, link, cipher: await services.keyring.forOrg(tx, connector.orgId) };
}

export const setLinkOpen = (tx: Db, connector: ConnectorFacts, source: { id: string }, open: boolean) =>
  tx.update(intakeLinks).set({ sourceOpen: open }).where(and(eq(intakeLinks.connectorId, connector.id), eq(intakeLinks.sourceId, source.id)));

/**
 * An edit older than the last event applied to the source (a late retry, or a replay that
 * carries an old text): applying it would bring old text back, so it changes nothing. Opens,
 * closes and reopens are applied whatever their age (they move the item, not its text; a copy
 * of one already received is a duplicate at the door).
 */
export function isStale(link: Pick<LockedLink, "sourceUpdatedAt">, source: SourceIssue, action: string): boolean {
  if (action !== "changed") return false;
  if (!source.updatedAt || !link.sourceUpdatedAt) return false;
  return Date.parse(source.updatedAt) < link.sourceUpdatedAt.getTime();
}

/** Remembers the newest source updated_at applied. */
export async function noteSourceUpdate(tx: Db, connector: ConnectorFacts, source: SourceIssue): Promise<void> {
  if (!source.updatedAt) return;
  await tx
    .update(intakeLinks)
    .set({ sourceUpdatedAt: sql`greatest(${intakeLinks.sourceUpdatedAt}, ${source.updatedAt}::timestamptz)` })
    .where(and(eq(intakeLinks.connectorId, connector.id), eq(intakeLinks.sourceId, source.id)));
}
