import crypto from "node:crypto";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../db/client.ts";
import { deleteOrgCommand } from "../server/admin/delete-org.ts";
import { mintKey } from "../server/admin/commands.ts";
import { Keyring, KeyUnavailableError, OrgCipher } from "../server/crypto/index.ts";
import { saveComment } from "../server/issues/comments.ts";
import { getIssue, saveIssue } from "../server/issues/index.ts";
import { createLogger } from "../server/log.ts";
import { transactionWithNotices } from "../server/events/index.ts";
import { enqueue } from "../server/outbox/index.ts";
import { checkpoint, claimIssue } from "../server/queue/index.ts";
import { seedOrg, type SeededOrg } from "../server/testing/fixtures.ts";
import { useTestServices } from "../server/testing/database.ts";
import { waitFor } from "../server/testing/wait.ts";
import { startInlineRunner } from "./inline.ts";
import { retascJobs } from "./catalog.ts";
import { humanCtx } from "../server/orgs/access.ts";
import { deleteOrg, ORG_DELETED } from "../server/orgs/delete.ts";
import { authenticateAgentKey } from "../server/orgs/index.ts";
import { purgeOrg } from "../server/orgs/purge.ts";
import { peopleOf, refusal } from "../server/orgs/testing.ts";

const masterKey = crypto.randomBytes(32);
const env = useTestServices({ keyring: new Keyring(masterKey) });
const log = createLogger("silent");

/** Every encrypted value a table holds for the org, read as stored: `*_enc` columns of tables with an org_id. */
async function ciphertextsOf(orgId: string): Promise<{ table: string; column: string; value: string }[]> {
  const columns = await query<{ table_name: string; column_name: string }>(
    env.services.db,
    sql`select c.table_name, c.column_name from information_schema.columns c
        where c.table_schema = current_schema() and c.column_name like '%\_enc'
          and exists (select 1 from information_schema.columns o
                      where o.table_schema = c.table_schema and o.table_name = c.table_name and o.column_name = 'org_id')`,
  );
  const found: { table: string; column: string; value: string }[] = [];
  for (const { table_name: table, column_name: column } of columns) {
    const rows = await query<{ v: string }>(
      env.services.db,
      sql`select ${sql.identifier(column)}::text as v from ${sql.identifier(table)} where org_id = ${orgId} and ${sql.identifier(column)} is not null`,
    );
    for (const row of rows) found.push({ table, column, value: row.v });
  }
  return found;
}

/** Rows left for the org in every table that has an org_id, the orgs row included, but the purge job's own outbox row. */
async function rowsLeft(orgId: string): Promise<number> {
  const tables = await query<{ table_name: string }>(
    env.services.db,
    sql`select c.table_name from information_schema.columns c join information_schema.tables t using (table_schema, table_name)
        where c.table_schema = current_schema() and c.column_name = 'org_id' and t.table_type = 'BASE TABLE'`,
  );
  let left = (await query(env.services.db, sql`select 1 from orgs where id = ${orgId}`)).length;
  for (const { table_name } of tables) {
    const purge = table_name === "outbox" ? sql` and job <> 'org.purge'` : sql``;
    left += (await query(env.services.db, sql`select 1 from ${sql.identifier(table_name)} where org_id = ${orgId}${purge}`)).length;
  }
  return left;
}

/** A modest org: a few hundred issues with bodies, comments, a claim and its checkpoint, all carrying the marker. */
async function fill(org: SeededOrg, marker: string, issues: number) {
  const ctx = org.agents.alice.ctx;
  const identifiers: string[] = [];
  for (let i = 0; i < issues; i++) {
    const issue = await saveIssue(ctx, { title: `${marker} ${i}`, body: `body ${marker}`, work: true, changeType: "feat", noDependency: "fill" });
    identifiers.push(issue.identifier);
  }
  for (const identifier of identifiers.slice(0, 20)) await saveComment(ctx, { issue: identifier, body: `comment ${marker}` });
  const claim = await claimIssue(org.agents.bob.ctx, { identifier: identifiers[0]! });
  await checkpoint(org.agents.bob.ctx, { identifier: identifiers[0]!, claimToken: claim.claimToken, done: `done ${marker}`, next: marker });
  return identifiers;
}

describe("deleting an org", () => {
  it("is the owner's alone: admins, members and agents are FORBIDDEN, a wrong name is INVALID_INPUT, and nothing is deleted", async () => {
    const org = await seedOrg(env.services, { prefix: "OWN", name: "Owned" });
    await env.services.db.execute(sql`update members set role = 'admin' where org_id = ${org.orgId} and user_id = ${org.agents.bob.userId}`);
    const { as } = await peopleOf(env.services, org);
    expect((await refusal(deleteOrg(as.bob, { confirmName: "Owned" }))).code).toBe("FORBIDDEN");
    expect((await refusal(deleteOrg(as.carol, { confirmName: "Owned" }))).code).toBe("FORBIDDEN");
    expect((await refusal(deleteOrg(org.agents.alice.ctx, { confirmName: "Owned" }))).code).toBe("FORBIDDEN");
    expect((await refusal(deleteOrg(as.alice, { confirmName: "owned" }))).code).toBe("INVALID_INPUT");
    expect((await refusal(deleteOrg(as.alice, {}))).code).toBe("INVALID_INPUT");
    expect(await authenticateAgentKey(env.services.db, org.agents.carol.key)).not.toBeNull();
    await expect(new Keyring(masterKey).forOrg(env.services.db, org.orgId)).resolves.toBeInstanceOf(OrgCipher);
  });

  it("destroys the key first: afterwards no content of the org decrypts, even with the master key; its keys, members and jobs end; the purge job removes its rows in batches, and the other org keeps everything", async () => {
    const marker = `SHRED${crypto.randomBytes(4).toString("hex")}`;
    const doomed = await seedOrg(env.services, { prefix: "DOOM", name: "Doomed" });
    const other = await seedOrg(env.services, { prefix: "KEEP", name: "Kept" });
    const issues = await fill(doomed, marker, 300);
    const kept = await fill(other, "kept", 5);
    const pending = await transactionWithNotices(env.services.db, (tx) =>
      enqueue(tx, "notify.send", { orgId: doomed.orgId, issueId: null, kind: "test", userId: doomed.agents.alice.userId, channel: "email" }),
    );

    const stored = await ciphertextsOf(doomed.orgId);
    expect(new Set(stored.map((s) => s.table))).toEqual(new Set(["issues", "comments", "checkpoints", "activity"]));
    // Readable before: the same master key opens it, so what follows is the deletion's doing.
    const before = await new Keyring(masterKey).forOrg(env.services.db, doomed.orgId);
    expect(before.decrypt(stored.find((s) => s.table === "comments")!.value)).toBe(`comment ${marker}`);

    const { as } = await peopleOf(env.services, doomed);
    const started = performance.now();
    const deleted = await deleteOrg(as.alice, { confirmName: "Doomed" });
    const keyDestroyedMs = performance.now() - started;
    console.log(`org with ${issues.length} issues: key destroyed, keys revoked, sessions and jobs ended in ${keyDestroyedMs.toFixed(0)} ms`);
    expect(keyDestroyedMs).toBeLessThan(1_000);
    expect(deleted).toMatchObject({ orgId: doomed.orgId, name: "Doomed", keysRevoked: 3, membersRemoved: 3, jobsCanceled: 1 });

    // With the master key and a keyring that never saw the org: no data key is left to unwrap,
    // and no other org's key (every one the master key unwraps) opens its ciphertext.
    const fresh = new Keyring(masterKey);
    await expect(fresh.forOrg(env.services.db, doomed.orgId)).rejects.toBeInstanceOf(KeyUnavailableError);
    const survivors = await query<{ org_id: string }>(env.services.db, sql`select distinct org_id from org_keys`);
    const ciphers = [new OrgCipher(doomed.orgId, new Map([[1, masterKey]]), 1)];
    for (const { org_id } of survivors) {
      const cipher = await fresh.forOrg(env.services.db, org_id);
      ciphers.push(cipher, new OrgCipher(doomed.orgId, new Map([[1, (cipher as unknown as { keys: Map<number, Buffer> }).keys.get(1)!]]), 1));
    }
    for (const { value } of await ciphertextsOf(doomed.orgId)) {
      for (const cipher of ciphers) expect(() => cipher.decrypt(value)).toThrow();
    }

    // Every door reads it as gone: the owner's session NOT_FOUND, the keys authenticate nothing, the job is canceled.
    expect((await refusal(humanCtx(env.services, { orgId: doomed.orgId, userId: doomed.agents.alice.userId, runtime: "cli" }))).code).toBe("NOT_FOUND");
    for (const who of ["alice", "bob", "carol"] as const) expect(await authenticateAgentKey(env.services.db, doomed.agents[who].key)).toBeNull();
    const [job] = await query<{ failed: boolean; last_error: string }>(env.services.db, sql`select failed_at is not null as failed, last_error from outbox where id = ${pending}`);
    expect(job).toEqual({ failed: true, last_error: ORG_DELETED });
    expect((await refusal(deleteOrg(as.alice, { confirmName: "Doomed" }))).code).toBe("NOT_FOUND");
    expect((await refusal(mintKey(env.services, { org: doomed.orgId, email: "late@example.com", runtime: "codex" }))).code).toBe("NOT_FOUND");

    // The rows go through the outbox job, as a runner takes it.
    const runner = await startInlineRunner({ services: env.services, database: env.tdb.database, log, catalog: retascJobs, sweeps: [], exclusive: false });
    try {
      await waitFor(async () => (await rowsLeft(doomed.orgId)) === 0 || null, 60_000, "the org's rows removed");
    } finally {
      await runner.stop();
    }
    const [purge] = await query<{ completed: boolean }>(env.services.db, sql`select completed_at is not null as completed from outbox where id = ${deleted.purgeJobId}`);
    expect(purge!.completed).toBe(true);
    // Run again (a retry after a crash), it succeeds and takes the first run's outbox row too.
    expect(await purgeOrg(env.services.db, doomed.orgId)).toMatchObject({ rows: 1 });
    expect(await query(env.services.db, sql`select 1 from outbox where org_id = ${doomed.orgId}`)).toEqual([]);

    expect(await authenticateAgentKey(env.services.db, other.agents.alice.key)).not.toBeNull();
    for (const identifier of kept) {
      expect((await getIssue(other.agents.alice.ctx, { identifier })).title).toMatch(/^kept /);
    }
  });

  it("the operator's delete-org needs no name and acts as the owner; a purge is refused for an org that still has its key", async () => {
    const org = await seedOrg(env.services, { prefix: "OPS", name: "Ops" });
    expect((await refusal(purgeOrg(env.services.db, org.orgId))).code).toBe("FORBIDDEN");
    expect(await rowsLeft(org.orgId)).toBeGreaterThan(0);
    const deleted = await deleteOrgCommand(env.services, { org: org.orgId });
    expect(deleted).toMatchObject({ orgId: org.orgId, name: "Ops", membersRemoved: 3 });
    await expect(new Keyring(masterKey).forOrg(env.services.db, org.orgId)).rejects.toBeInstanceOf(KeyUnavailableError);
    expect((await refusal(deleteOrgCommand(env.services, { org: org.orgId }))).code).toBe("NOT_FOUND");
    await purgeOrg(env.services.db, org.orgId, { batch: 7 });
    expect(await rowsLeft(org.orgId)).toBe(0);
  });
});
