import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { DomainError } from "../errors.ts";
import { saveIssue } from "../issues/index.ts";
import { useTestServices } from "../testing/database.ts";
import { TestClock, testConfig } from "../testing/db.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { checkpoint, claimIssue, heartbeat, releaseIssue } from "./index.ts";

/**
 * A stale token is refused (STALE_CLAIM) and changes nothing, by the clock alone: the lease
 * has run out but no sweep ran and nobody claimed again, so the issue row still carries the
 * lease and its token hash. Only the expiry time tells the write it is late. Each write is
 * tried exactly at expiry (expiresAt is the first instant the lease is no longer live) and
 * an hour after.
 */
const TTL_MS = 60_000;
const clock = new TestClock();
const env = useTestServices({ clock, config: testConfig({ LEASE_TTL_SECONDS: String(TTL_MS / 1000) }) });

type Token = { identifier: string; claimToken: string };
const writes: Record<string, (ctx: Ctx, token: Token) => Promise<unknown>> = {
  heartbeat: (ctx, token) => heartbeat(ctx, token),
  checkpoint: (ctx, token) => checkpoint(ctx, { ...token, done: "late", next: "late" }),
  release: (ctx, token) => releaseIssue(ctx, { ...token, note: "late" }),
  // {identifier, status: "done", claimToken} alone takes retasc_finish, the SQL fast path (server/issues/finish.ts).
  "fast-path finish": (ctx, token) => saveIssue(ctx, { ...token, status: "done" }),
  // Any other field sends the finish down the general path (requireLiveToken in server/issues/fencing.ts).
  "general-path finish": (ctx, token) => saveIssue(ctx, { ...token, status: "done", labels: ["late"] }),
};

const outcome = (error: unknown) => (error instanceof DomainError ? error.code : `not a refusal: ${String(error)}`);

/** Everything a write under the lease could touch, as stored. */
async function stored(orgId: string, identifier: string) {
  const db = env.services.db;
  const [issue] = await query<Record<string, unknown>>(
    db,
    sql`select status, fence, lease_id, lease_token_hash, lease_expires_at, updated_at from issues where org_id = ${orgId} and identifier = ${identifier}`,
  );
  const counts = await query<Record<string, number>>(
    db,
    sql`select (select count(*)::int from activity a join issues i on i.id = a.issue_id where i.org_id = ${orgId} and i.identifier = ${identifier}) as activity,
               (select count(*)::int from checkpoints c join issues i on i.id = c.issue_id where i.org_id = ${orgId} and i.identifier = ${identifier}) as checkpoints,
               (select count(*)::int from issue_labels l join issues i on i.id = l.issue_id where i.org_id = ${orgId} and i.identifier = ${identifier}) as labels`,
  );
  const leases = await query<Record<string, unknown>>(
    db,
    sql`select l.fence, l.ended_at, l.end_reason, l.expires_at from leases l join issues i on i.id = l.issue_id where i.org_id = ${orgId} and i.identifier = ${identifier} order by l.fence`,
  );
  return { issue, counts: counts[0], leases };
}

describe("a stale token is refused by the clock alone (no sweep, no re-claim)", () => {
  for (const [moment, past] of [
    ["exactly at expiry", 0],
    ["an hour after expiry", 3_600_000],
  ] as const) {
    for (const [name, write] of Object.entries(writes)) {
      it(`${name} ${moment}: STALE_CLAIM, nothing changed`, async () => {
        const org = await seedOrg(env.services, { prefix: "EXP" });
        const ctx = org.agents.alice.ctx;
        const { identifier } = await saveIssue(ctx, { title: `${name} ${moment}`, work: true, changeType: "feat", noDependency: "alone" });
        const claim = await claimIssue(ctx, { identifier });
        const live = await checkpoint(ctx, { identifier, claimToken: claim.claimToken, done: "before expiry" }).then(() => "ACCEPTED", outcome);
        expect(live, "a live token accepted (before expiry)").toBe("ACCEPTED");
        // The checkpoint renewed the lease: the expiry in force is the stored one.
        const before = await stored(org.orgId, identifier);
        clock.set(new Date(new Date(before.issue!.lease_expires_at as string | Date).getTime() + past));

        const refused = await write(ctx, { identifier, claimToken: claim.claimToken }).then(() => "ACCEPTED", outcome);
        expect(refused, `a stale token refused (${name}, ${moment})`).toBe("STALE_CLAIM");
        expect(await stored(org.orgId, identifier), `a stale token changes nothing (${name}, ${moment})`).toEqual(before);
      });
    }
  }
});
