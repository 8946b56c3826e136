import { and, asc, eq, gt, inArray, sql } from "drizzle-orm";
import { openStatuses } from "../../constants/statuses.ts";
import { pgArray, query, type Db } from "../../db/client.ts";
import { isOpen } from "../../db/schema/dispatch.ts";
import { issues } from "../../db/schema/index.ts";
import type { Services } from "../context.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { reachable, type Reach } from "../orgs/scope.ts";
import { mentionsIn, termsOf, type Terms } from "./similar-terms.ts";
import { identifierIn } from "./lookups.ts";

/**
 * The duplicate gate's matcher (decision 066). Titles and bodies are ciphertext, so each issue's
 * terms (similar-terms.ts) are kept in `issue_terms` as keyed digests (OrgCipher.termDigest);
 * a new issue's terms are digested the same way and looked up there. A term found in more than
 * RARE_MAX open issues of the org is common here and ignored; an open issue sharing rare terms
 * worth NAMED_AT points (a title word in both titles counts most) looks like the same work.
 */
export const RARE_MAX = 12;
export const NAMED_AT = 12;
/** Title words say what the work is; body words mostly how (and bodies share boilerplate), so they weigh less. */
const points = { titleTitle: 6, titleBody: 4, bodyBody: 1 };
/** Named at most in one refusal, the closest first; the retry names the next ones. */
export const NAMED_MAX = 8;
/** Issues a backfill step indexes: a gated create in an org not yet walked runs one first. */
const BACKFILL_STEP = 500;

export interface SimilarIssue {
  identifier: string;
  title: string;
  /** The new issue's words that the named one shares, or that it mentions the named one. */
  shared: string[];
  mentioned: boolean;
}

export interface TermsEntry {
  id: string;
  title: string;
  body: string | null;
  status: string;
  /** Read unlocked at this `updated_at` (the backfill's text of it): its terms are written only if the issue is unchanged since and has none. */
  readAt?: string;
}

/** Replaces the term rows of these issues of one org; `fresh`: new issues, with no rows yet. */
export async function indexTerms(tx: Db, cipher: OrgCipher, orgId: string, entries: TermsEntry[], options: { fresh?: boolean } = {}): Promise<void> {
  if (entries.length === 0) return;
  const ids: string[] = [];
  const digests: string[] = [];
  const inTitle: string[] = [];
  const open: string[] = [];
  const readAt: string[] = [];
  for (const entry of entries) {
    const terms = termsOf(entry.title, entry.body);
    const isOpenNow = (openStatuses as readonly string[]).includes(entry.status) ? "t" : "f";
    for (const [set, title] of [[terms.title, "t"], [terms.body, "f"]] as const) {
      for (const term of set) {
        ids.push(entry.id);
        digests.push(cipher.termDigest(term));
        inTitle.push(title);
        open.push(isOpenNow);
        readAt.push(entry.readAt ?? "");
      }
    }
  }
  if (!options.fresh) await tx.execute(sql`delete from issue_terms where issue_id = any(${pgArray(entries.map((e) => e.id))}::text[])`);
  if (ids.length === 0) return;
  // Issues written in this transaction (no `readAt`): their terms go in as they are, no row looked up per term (issue 29).
  if (entries.every((e) => !e.readAt)) {
    await tx.execute(sql`insert into issue_terms (org_id, issue_id, term, in_title, open)
      select ${orgId}, u.issue_id, u.term, u.in_title, u.open
      from unnest(${pgArray(ids)}::text[], ${pgArray(digests)}::bigint[], ${pgArray(inTitle)}::boolean[], ${pgArray(open)}::boolean[]) as u(issue_id, term, in_title, open)
      on conflict do nothing`);
    return;
  }
  await tx.execute(sql`insert into issue_terms (org_id, issue_id, term, in_title, open)
    select ${orgId}, u.issue_id, u.term, u.in_title, u.open
    from unnest(${pgArray(ids)}::text[], ${pgArray(digests)}::bigint[], ${pgArray(inTitle)}::boolean[], ${pgArray(open)}::boolean[], ${pgArray(readAt)}::text[])
      as u(issue_id, term, in_title, open, read_at)
    where exists (select 1 from issues i where i.id = u.issue_id
                    and (u.read_at = '' or (i.updated_at = u.read_at::timestamptz
                                           and not exists (select 1 from issue_terms t where t.issue_id = u.issue_id))))
    on conflict do nothing`);
}

/**
 * One step of an org's backfill: the next `limit` of its issues in identifier order (the
 * org's unique index), indexed under its key, and how far it got (issue_term_backfills). Issues
 * filed before the index, or written by an export's import, are indexed this way; every other
 * write indexes its own. Returns how many it read; 0 once the org is done.
 *
 * It locks no issue: a pick skips locked rows, so a step holding 500 of them (it read them FOR
 * SHARE) handed out work behind them for as long as it ran (decision 066, amended). It writes the
 * terms only of issues that have none yet and are unchanged since it read them: every other
 * write indexes its own words, and wins.
 */
export async function backfillStep(db: Db, cipher: OrgCipher, orgId: string, limit = BACKFILL_STEP): Promise<number> {
  return db.transaction(async (raw) => {
    const tx = raw as unknown as Db;
    await tx.execute(sql`insert into issue_term_backfills (org_id) values (${orgId}) on conflict do nothing`);
    const [state] = await query<{ after: string; done: boolean }>(tx, sql`select after, done_at is not null as done from issue_term_backfills where org_id = ${orgId} for update`);
    if (!state || state.done) return 0;
    const rows = await tx
      .select({ id: issues.id, identifier: issues.identifier, titleEnc: issues.titleEnc, bodyEnc: issues.bodyEnc, status: issues.status, readAt: sql<string>`${issues.updatedAt}::text` })
      .from(issues)
      .where(and(eq(issues.orgId, orgId), gt(issues.identifier, state.after), sql`not exists (select 1 from issue_terms t where t.issue_id = ${issues.id})`))
      .orderBy(asc(issues.identifier))
      .limit(limit);
    const entries = rows.map((r) => ({ id: r.id, title: cipher.decrypt(r.titleEnc), body: cipher.decrypt(r.bodyEnc), status: r.status, readAt: r.readAt }));
    await indexTerms(tx, cipher, orgId, entries, { fresh: true });
    const last = rows.at(-1)?.identifier ?? state.after;
    await tx.execute(sql`update issue_term_backfills set after = ${last}, done_at = ${rows.length < limit ? sql`now()` : sql`null`} where org_id = ${orgId}`);
    return rows.length;
  });
}

/** Whether an org's issues from before the index are all indexed. */
export async function backfilled(db: Db, orgId: string): Promise<boolean> {
  const rows = await query<{ done: boolean }>(db, sql`select done_at is not null as done from issue_term_backfills where org_id = ${orgId}`);
  return rows[0]?.done === true;
}

/** sweep.issue-terms: orgs not walked yet, a batch each, each under its own key. */
export async function issueTermsSweep(services: Services, options: { limit?: number } = {}): Promise<{ indexed: number }> {
  const limit = options.limit ?? 2_000;
  const pending = await query<{ id: string }>(
    services.db,
    // A frozen org waits for the move (decision 110).
    sql`select o.id from orgs o where o.frozen_at is null and not exists (select 1 from issue_term_backfills b where b.org_id = o.id and b.done_at is not null) limit 50`,
  );
  let indexed = 0;
  for (const { id: orgId } of pending) {
    if (indexed >= limit) break;
    // A deleted org's key is gone: nothing of it can be read, and its purge removes the rest.
    const cipher = await services.keyring.forOrg(services.db, orgId).catch(() => null);
    if (!cipher) continue;
    indexed += await backfillStep(services.db, cipher, orgId, Math.min(BACKFILL_STEP, limit - indexed));
  }
  return { indexed };
}

/**
 * The open issues, within the caller's reach, that a new issue's title and body look like: those
 * it mentions, then those sharing rare terms worth NAMED_AT points, closest first.
 */
export async function similarOpenIssues(tx: Db, cipher: OrgCipher, reach: Reach, title: string, body: string | null | undefined): Promise<SimilarIssue[]> {
  const terms = termsOf(title, body);
  const scores = await scoreByTerms(tx, cipher, reach.orgId, terms);
  const mentioned = mentionsIn(`${title}\n${body ?? ""}`);
  const ids = [...scores.entries()].filter(([, s]) => s.points >= NAMED_AT).map(([id]) => id);
  if (ids.length === 0 && mentioned.length === 0) return [];
  const rows = await tx
    .select({ id: issues.id, identifier: issues.identifier, titleEnc: issues.titleEnc, mentioned: identifierIn(reach.orgId, mentioned) })
    .from(issues)
    .where(and(reachable(reach, issues), isOpen(issues.status), sql`(${ids.length > 0 ? inArray(issues.id, ids) : sql`false`} or ${mentioned.length > 0 ? identifierIn(reach.orgId, mentioned) : sql`false`})`));
  return rows
    .map((row) => {
      const score = scores.get(row.id);
      const isMentioned = Boolean(row.mentioned);
      return {
        identifier: row.identifier,
        title: cipher.decrypt(row.titleEnc),
        shared: score && score.points >= NAMED_AT ? score.shared : [],
        mentioned: isMentioned,
        rank: (isMentioned ? 1_000 : 0) + (score?.points ?? 0),
      };
    })
    .sort((a, b) => b.rank - a.rank || a.identifier.localeCompare(b.identifier))
    .map(({ rank: _rank, ...issue }) => issue);
}

/** Each open issue sharing a rare term, with its points and the shared words. */
async function scoreByTerms(tx: Db, cipher: OrgCipher, orgId: string, terms: Terms) {
  const byDigest = new Map<string, { term: string; inTitle: boolean }>();
  for (const term of terms.title) byDigest.set(cipher.termDigest(term), { term, inTitle: true });
  for (const term of terms.body) byDigest.set(cipher.termDigest(term), { term, inTitle: false });
  const scores = new Map<string, { points: number; shared: string[] }>();
  if (byDigest.size === 0) return scores;
  // Each term's open issues, at most one past the threshold: past it the term is common here.
  const rows = await query<{ term: string; issue_id: string; in_title: boolean }>(
    tx,
    sql`select q.term::text as term, m.issue_id, m.in_title
        from unnest(${pgArray([...byDigest.keys()])}::bigint[]) as q(term)
        cross join lateral (
          select t.issue_id, t.in_title from issue_terms t
          where t.org_id = ${orgId} and t.term = q.term and t.open
          limit ${RARE_MAX + 1}) m`,
  );
  const perTerm = new Map<string, typeof rows>();
  for (const row of rows) perTerm.set(row.term, [...(perTerm.get(row.term) ?? []), row]);
  for (const [digest, found] of perTerm) {
    if (found.length > RARE_MAX) continue;
    const mine = byDigest.get(digest)!;
    for (const row of found) {
      const score = scores.get(row.issue_id) ?? { points: 0, shared: [] };
      score.points += mine.inTitle && row.in_title ? points.titleTitle : mine.inTitle || row.in_title ? points.titleBody : points.bodyBody;
      score.shared.push(mine.term);
      scores.set(row.issue_id, score);
    }
  }
  return scores;
}
