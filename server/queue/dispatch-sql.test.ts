import { sql, TransactionRollbackError, type Column, type SQL } from "drizzle-orm";
import { alias, PgDialect } from "drizzle-orm/pg-core";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { dispatchable, dispatchCandidate, dispatchIndexOrder, dispatchOrder, inLanes, lapsed, leased, unleased } from "../../db/schema/dispatch.ts";
import { issues } from "../../db/schema/index.ts";
import { saveIssue } from "../issues/index.ts";
import { levelOfPriority } from "../issues/levels.ts";
import { rankLockKey } from "../issues/ranking.ts";
import { jobSchemas } from "../outbox/jobs.ts";
import { TestClock, testConfig } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { bindChannel, seedOrg } from "../testing/fixtures.ts";
import { claimIssue } from "./index.ts";

/**
 * The dispatch functions (db/migrations) cannot import the TypeScript dispatch rule
 * (db/schema/dispatch.ts), so they hold a copy. These tests read the functions and indexes
 * back from the database and fail when they drift from what the rule renders.
 */
const clock = new TestClock();
const env = useTestServices({ clock, config: testConfig({ LEASE_TTL_SECONDS: "60" }) });
const dialect = new PgDialect();
const i = alias(issues, "i");

/** A fragment as text, with no parameters: it is compared with SQL someone wrote by hand. */
function text(fragment: SQL, invokeSource?: "indexes"): string {
  const rendered = dialect.sqlToQuery(fragment, invokeSource);
  expect(rendered.params).toEqual([]);
  return rendered.sql;
}

/** Case, quotes and spacing aside: how PL/pgSQL text and rendered fragments are compared. */
const normal = (s: string) =>
  s
    .toLowerCase()
    .replaceAll('"', "")
    .replace(/\s+/g, " ")
    .replace(/\s*([(),])\s*/g, "$1")
    .replace(/,/g, ", ")
    .trim();

async function functionText(name: string): Promise<string> {
  const [row] = await query<{ def: string }>(env.services.db, sql`select pg_get_functiondef(${name}::regproc) as def`);
  return normal(row!.def);
}

const occurrences = (haystack: string, needle: string) => haystack.split(needle).length - 1;

describe("the dispatch functions and indexes follow the TypeScript dispatch rule", () => {
  it("retasc_next_issue picks with the rule's predicate, lanes and order, for both scopes", async () => {
    const lanes = inLanes(i, sql.raw("p_user_id"), sql.raw("p_all_lanes"));
    const ordered = sql`order by ${sql.join(dispatchOrder(i), sql`, `)} limit 1`;
    const body = await functionText("retasc_next_issue");
    // The two halves of the rule (decision 076): unleased candidates and lapsed leases, the better of the two in the rule's order.
    const scoped = "(p_project_ids is null or i.project_id = any(p_project_ids))";
    for (const scope of ["i.project_id = p_project_id", `i.org_id = p_org_id and ${scoped}`]) {
      expect(occurrences(body, normal(`where ${scope} and ${text(unleased(i))} and ${text(lanes)} and i.id <> all(v_passed) ${text(ordered)}`))).toBe(1);
    }
    for (const scope of ["i.org_id = p_org_id and i.project_id = p_project_id", `i.org_id = p_org_id and ${scoped}`]) {
      expect(occurrences(body, normal(`where ${scope} and ${text(lapsed(i, sql.raw("p_now")))} offset 0) i where ${text(lanes)} and i.id <> all(v_passed) ${text(ordered)}`))).toBe(1);
    }
    expect(occurrences(body, normal(`) i ${text(ordered)};`))).toBe(2);
    // Claim exclusivity (next_issue): the row picked is locked only while still dispatchable in the caller's lanes, and
    // not against a row a reference to it holds (FOR KEY SHARE: a comment, the duplicate gate's terms; decision 076 amended).
    // By its org too, so it reads one partition (decision 099).
    const lock = sql`where i.org_id = p_org_id and i.id = v_id and ${dispatchable(i, sql.raw("p_now"))} and ${lanes} for no key update skip locked`;
    expect(occurrences(body, normal(text(lock))), "claim exclusivity (next_issue): the pick locks its row").toBe(1);
    // The pick that locks as it reads (decision 118): the unleased half, no live lease, the lanes and the order, for
    // both scopes, taken only when no lapsed row (the other half, in any lane) is within reach.
    const live = "(i.lease_expires_at is null or i.lease_expires_at <= p_now)";
    for (const scope of ["i.project_id = p_project_id", `i.org_id = p_org_id and ${scoped}`]) {
      const lockedRead = `where ${scope} and ${text(unleased(i))} and ${live} and ${text(lanes)} ${text(ordered)} for no key update skip locked;`;
      expect(occurrences(body, normal(lockedRead)), "the locked read follows the rule").toBe(1);
    }
    const lapsedInReach = `where i.org_id = p_org_id and (p_project_id is null or i.project_id = p_project_id) and ${scoped} and ${text(lapsed(i, sql.raw("p_now")))})`;
    expect(occurrences(body, normal(lapsedInReach)), "the locked read waits for no lapsed row").toBe(1);
    expect(body).toContain(normal("if v_foreign or not (p_project_ids is null or p_project_id = any(p_project_ids)) then"));
  });

  it("retasc_next_wave reads the pick's two halves with the rule's predicate, lanes and order, for both scopes (five, not one); the unleased half alone with no lapsed row in reach", async () => {
    const lanes = inLanes(i, sql.raw("p_user_id"), sql.raw("p_all_lanes"));
    const ordered = sql`order by ${sql.join(dispatchOrder(i), sql`, `)} limit 5`;
    const body = await functionText("retasc_next_wave");
    const scoped = "(p_project_ids is null or i.project_id = any(p_project_ids))";
    // The unleased half twice a scope: alone when no lapsed row is in reach (decision 119), and in the union.
    for (const scope of ["i.project_id = p_project_id", `i.org_id = p_org_id and ${scoped}`]) {
      expect(occurrences(body, normal(`where ${scope} and ${text(unleased(i))} and ${text(lanes)} ${text(ordered)}`))).toBe(2);
      expect(occurrences(body, normal(`where ${scope} and ${text(unleased(i))} and ${text(lanes)} ${text(ordered)}) i;`))).toBe(1);
    }
    for (const scope of ["i.org_id = p_org_id and i.project_id = p_project_id", `i.org_id = p_org_id and ${scoped}`]) {
      expect(occurrences(body, normal(`where ${scope} and ${text(lapsed(i, sql.raw("p_now")))} offset 0) i where ${text(lanes)} ${text(ordered)}`))).toBe(1);
    }
    expect(occurrences(body, normal(`) i ${text(ordered)}) i;`))).toBe(2);
    const lapsedInReach = `if not exists (select 1 from issues i where i.org_id = p_org_id and (p_project_id is null or i.project_id = p_project_id) and ${scoped} and ${text(lapsed(i, sql.raw("p_now")))}) then`;
    expect(occurrences(body, normal(lapsedInReach)), "the unleased half alone only with no lapsed row in reach").toBe(1);
  });

  it("retasc_finish and retasc_finishes take the graph lock lockOrgGraph takes", async () => {
    expect(await functionText("retasc_finish")).toContain(normal(`pg_advisory_xact_lock_shared(${text(rankLockKey(sql.raw("p_org_id")))})`));
    expect(await functionText("retasc_finishes")).toContain(normal(`pg_advisory_xact_lock_shared(${text(rankLockKey(sql.raw("o.org_id")))})`));
  });

  it("the dispatch indexes are the rule's order over its candidates", async () => {
    const columns = (lead: "project_id" | "org_id") =>
      [sql.identifier(lead), ...dispatchIndexOrder<Column>(issues)].map((entry) => text(sql`${entry}`, "indexes")).join(", ");
    const probes = {
      issues_org_dispatch_idx: sql.raw(`create index probe_idx on issues using btree (${columns("org_id")})`),
      issues_unleased_idx: sql.raw(`create index probe_idx on issues using btree (${columns("project_id")}) where ${text(unleased(issues))}`),
      issues_org_unleased_idx: sql.raw(`create index probe_idx on issues using btree (${columns("org_id")}) where ${text(unleased(issues))}`),
      issues_lease_check_idx: sql.raw(`create index probe_idx on issues using btree (org_id, lease_check_at) where ${text(leased(issues))}`),
    };
    for (const [name, probe] of Object.entries(probes)) {
      const [stored] = await query<{ def: string }>(env.services.db, sql`select indexdef as def from pg_indexes where indexname = ${name}`);
      // PostgreSQL writes both definitions back in its own words; the probe is rolled back.
      let rendered = "";
      await env.services.db
        .transaction(async (tx) => {
          await tx.execute(probe);
          const [row] = await query<{ def: string }>(tx, sql`select pg_get_indexdef('probe_idx'::regclass) as def`);
          rendered = row!.def;
          tx.rollback();
        })
        .catch((error: unknown) => {
          if (!(error instanceof TransactionRollbackError)) throw error;
        });
      expect(stored!.def.replace(name, "probe_idx")).toBe(rendered);
    }
  });
});

describe("what the dispatch functions write", () => {
  it("a finish on the one-statement path ranks the closed issue by levelOfPriority, for every priority", async () => {
    const org = await seedOrg(env.services);
    const { alice } = org.agents;
    for (const priority of [0, 1, 2, 3, 4]) {
      const issue = await saveIssue(alice.ctx, { title: `P${priority}`, work: true, changeType: "feat", noDependency: "none", priority });
      const claim = await claimIssue(alice.ctx, { identifier: issue.identifier });
      const done = await saveIssue(alice.ctx, { identifier: issue.identifier, status: "done", claimToken: claim.claimToken });
      expect({ priority, level: done.effectiveLevel }).toEqual({ priority, level: levelOfPriority(priority) });
      const [row] = await query<{ own_level: number; effective_level: number }>(
        env.services.db,
        sql`select own_level, effective_level from issues where org_id = ${org.orgId} and identifier = ${issue.identifier}`,
      );
      expect(row).toEqual({ own_level: levelOfPriority(priority), effective_level: levelOfPriority(priority) });
    }
  });

  it("outbox rows written in SQL (a finish, a reclaim) pass the job's payload schema, as enqueue's would", async () => {
    const org = await seedOrg(env.services);
    const { alice, bob } = org.agents;
    // Bob's issue, finished by Alice's agent: Bob hears of it (a finish nobody hears writes no event, decision 104).
    await bindChannel(env.services, org.orgId, bob.userId);
    const finished = await saveIssue(bob.ctx, { title: "Finished", work: true, changeType: "feat", noDependency: "none" });
    const claim = await claimIssue(alice.ctx, { identifier: finished.identifier });
    await saveIssue(alice.ctx, { identifier: finished.identifier, status: "done", claimToken: claim.claimToken });
    const expired = await saveIssue(alice.ctx, { title: "Expired", work: true, changeType: "feat", noDependency: "none" });
    await claimIssue(alice.ctx, { identifier: expired.identifier });
    clock.advance(61_000);
    await claimIssue(bob.ctx, { identifier: expired.identifier });

    const rows = await query<{ job: string; payload: unknown }>(env.services.db, sql`select job, payload from outbox where org_id = ${org.orgId}`);
    const kinds = rows.map((row) => (row.payload as { kind?: string }).kind).sort();
    expect(kinds).toEqual(["done", "reclaimed"]);
    for (const row of rows) {
      expect(row.job).toBe("notify.issue_event");
      expect(jobSchemas["notify.issue_event"].safeParse(row.payload)).toMatchObject({ success: true });
    }
  });
});
