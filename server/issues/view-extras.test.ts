import fs from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { migrationsFolder, query, type Db } from "../../db/client.ts";
import { retryingConflicts } from "../../db/retry.ts";
import { checkpoint, claimIssue } from "../queue/index.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { testDriver } from "../testing/db.ts";
import { saveAttachment } from "./attachments.ts";
import { saveComment } from "./comments.ts";
import { saveIssue } from "./index.ts";
import { addRelation } from "./relations.ts";

/**
 * An issue's view reads only the sections its `view_extras` bits say may hold rows (migration
 * 0085, decision 119). The bits are a hint the triggers keep, so the test is that no view reads
 * differently with them than with every section read (all bits set), and that each kind of row
 * sets its bit.
 */

const env = useTestServices();

const ALL = 63;

async function reads(db: Db, orgId: string, id: string) {
  const [row] = await query<{ reads: string; discussion: string }>(
    db,
    sql`select retasc_view_reads(${id}, now(), ${orgId}::text)::text as reads, retasc_claim_discussion(${id}, ${orgId}::text)::text as discussion`,
  );
  return { reads: JSON.parse(row!.reads) as Record<string, unknown>, discussion: JSON.parse(row!.discussion) as Record<string, unknown> };
}

async function bitsOf(db: Db, orgId: string) {
  const rows = await query<{ identifier: string; bits: number }>(db, sql`select identifier, view_extras as bits from issues where org_id = ${orgId} order by number`);
  return Object.fromEntries(rows.map((r) => [r.identifier, r.bits]));
}

describe("the view's sections by view_extras (decision 119)", () => {
  it("each kind of row sets its issue's bit, and every view reads as it does with all sections read", async () => {
    const org = await seedOrg(env.services, { prefix: "VX" });
    const { alice, bob } = org.agents;
    const epic = await saveIssue(alice.ctx, { title: "Epic", work: false, changeType: "feat", noDependency: "none", labels: ["ui"] }); // VX-1: labels
    const child = await saveIssue(alice.ctx, { title: "Child", work: true, changeType: "feat", noDependency: "none", parent: epic.identifier }); // VX-2
    const work = await saveIssue(alice.ctx, { title: "Work", work: true, changeType: "feat", noDependency: "none" }); // VX-3
    const plain = await saveIssue(alice.ctx, { title: "Plain", work: true, changeType: "feat", noDependency: "none" }); // VX-4
    await addRelation(alice.ctx, { sourceId: work.identifier, targetId: epic.identifier, type: "related" });
    await saveComment(alice.ctx, { issue: epic.identifier, body: "on the epic" });
    await saveAttachment(alice.ctx, { issue: epic.identifier, url: "https://example.com/spec", title: "Spec" });
    const claim = await claimIssue(bob.ctx, { identifier: work.identifier });
    await checkpoint(bob.ctx, { identifier: work.identifier, claimToken: claim.claimToken, done: "half", next: "the rest" });
    await saveComment(bob.ctx, { issue: work.identifier, body: "on the work" });

    const db = env.services.db;
    // relations 1, labels 2, children 4, checkpoints 8, comments 16, attachments 32
    expect(await bitsOf(db, org.orgId)).toEqual({ [epic.identifier]: 1 | 2 | 4 | 16 | 32, [child.identifier]: 0, [work.identifier]: 1 | 8 | 16, [plain.identifier]: 0 });

    const ids = await query<{ id: string; identifier: string }>(db, sql`select id, identifier from issues where org_id = ${org.orgId} order by number`);
    const withBits = await Promise.all(ids.map((r) => reads(db, org.orgId, r.id)));
    await query(db, sql`update issues set view_extras = ${ALL} where org_id = ${org.orgId}`);
    const withAll = await Promise.all(ids.map((r) => reads(db, org.orgId, r.id)));
    expect(withBits).toEqual(withAll);
    // The sections are really there to hide: the epic's view and discussion carry rows of each.
    const epicReads = withBits[0]!;
    expect(epicReads.reads).toMatchObject({ labels: ["ui"], children: [expect.objectContaining({ identifier: child.identifier })], rels: [expect.anything()] });
    expect(epicReads.discussion).toMatchObject({ commentsTotal: 1, attachmentsTotal: 1 });
    expect(withBits[1]!.reads).toMatchObject({ parent: expect.objectContaining({ identifier: epic.identifier }) });
    expect(withBits[2]!.reads).toMatchObject({ checkpoint: expect.objectContaining({ runtime: expect.any(String) }), lease: expect.objectContaining({ fence: 1 }) });
  });

  it("a child moved under a parent marks it; a statement of many rows marks each issue once", async () => {
    const org = await seedOrg(env.services, { prefix: "VY" });
    const a = org.agents.alice.ctx;
    const epic = await saveIssue(a, { title: "Epic", work: false, changeType: "feat", noDependency: "none" });
    const loose = await saveIssue(a, { title: "Loose", work: true, changeType: "feat", noDependency: "none" });
    const other = await saveIssue(a, { title: "Other", work: true, changeType: "feat", noDependency: "none" });
    const db = env.services.db;
    expect((await bitsOf(db, org.orgId))[epic.identifier]).toBe(0);
    await saveIssue(a, { identifier: loose.identifier, parent: epic.identifier });
    expect((await bitsOf(db, org.orgId))[epic.identifier]).toBe(4);
    // Two comments on each of two issues in one statement, as an import writes them.
    await query(
      db,
      sql`insert into comments (id, org_id, issue_id, body_enc, created_at)
          select gen_random_uuid()::text, i.org_id, i.id, 'x', now() from issues i, generate_series(1, 2)
           where i.org_id = ${org.orgId} and i.identifier in (${loose.identifier}, ${other.identifier})`,
    );
    const bits = await bitsOf(db, org.orgId);
    expect([bits[loose.identifier], bits[other.identifier]]).toEqual([16, 16]);
  });

  it(`concurrent writers of every kind of row leave no issue with rows behind a clear bit (${testDriver})`, async () => {
    const org = await seedOrg(env.services, { prefix: "VC" });
    const a = org.agents.alice.ctx;
    const db = env.services.db;
    for (let n = 0; n < 8; n++) await saveIssue(a, { title: `Busy ${n}`, work: true, changeType: "feat", noDependency: "none" });
    const ids = (await query<{ id: string }>(db, sql`select id from issues where org_id = ${org.orgId} order by number`)).map((r) => r.id);
    const [label] = await query<{ id: string }>(db, sql`insert into labels (id, org_id, name) values (gen_random_uuid()::text, ${org.orgId}, 'busy') returning id`);
    const o = org.orgId;
    // Each statement on its own connection of the pool (10), many on the same issues at once: both
    // ends of a pair related both ways, a parent taking children, every kind of row on every issue.
    // Two first marks can lock two issues in opposite orders (a relation's trigger marks both ends
    // in id order, a child's move holds the child while it marks the parent): PostgreSQL ends one
    // with a deadlock, and the statement runs again, as every door's write does (retryingConflicts).
    const writes = ids.flatMap((id, n) => {
      const next = ids[(n + 1) % ids.length]!;
      return [
        ...Array.from({ length: 3 }, () => sql`insert into comments (id, org_id, issue_id, body_enc, created_at) values (gen_random_uuid()::text, ${o}, ${id}, 'x', now())`),
        sql`insert into relations (id, org_id, source_id, target_id, type) values (gen_random_uuid()::text, ${o}, ${id}, ${next}, 'related')`,
        sql`insert into relations (id, org_id, source_id, target_id, type) values (gen_random_uuid()::text, ${o}, ${next}, ${id}, 'related')`,
        sql`insert into issue_labels (issue_id, label_id) values (${id}, ${label!.id})`,
        sql`insert into checkpoints (id, org_id, issue_id, created_at) values (gen_random_uuid()::text, ${o}, ${id}, now())`,
        sql`insert into attachments (id, org_id, issue_id, url_enc, created_at) values (gen_random_uuid()::text, ${o}, ${id}, 'x', now())`,
        ...(n % 2 === 1 ? [sql`update issues set parent_id = ${ids[n - 1]!} where id = ${id}`] : []),
      ];
    });
    await Promise.all(writes.map((statement) => retryingConflicts(() => db.execute(statement))));
    const hidden = await query<{ n: number; missing: number }>(
      db,
      sql`select i.number as n,
                 (case when exists (select 1 from relations r where r.source_id = i.id or r.target_id = i.id) then 1 else 0 end
                | case when exists (select 1 from issue_labels l where l.issue_id = i.id) then 2 else 0 end
                | case when exists (select 1 from issues c where c.parent_id = i.id) then 4 else 0 end
                | case when exists (select 1 from checkpoints c where c.issue_id = i.id) then 8 else 0 end
                | case when exists (select 1 from comments c where c.issue_id = i.id) then 16 else 0 end
                | case when exists (select 1 from attachments c where c.issue_id = i.id) then 32 else 0 end) & ~i.view_extras as missing
            from issues i where i.org_id = ${o}`,
    );
    expect(hidden.filter((r) => r.missing !== 0)).toEqual([]);
    expect((await bitsOf(db, o))["VC-1"]).toBe(63); // a parent, with a row of every kind
  });

  it("an issue filed before the migration reads every section: the column's first statements give existing rows all bits", async () => {
    const org = await seedOrg(env.services, { prefix: "VZ" });
    const a = org.agents.alice.ctx;
    const issue = await saveIssue(a, { title: "Older", work: true, changeType: "feat", noDependency: "none" });
    await saveComment(a, { issue: issue.identifier, body: "said before" });
    const db = env.services.db;
    // Undo the column for this test's database and apply the migration's first two statements again.
    const text = fs.readFileSync(path.join(migrationsFolder, "0085_view_extras.sql"), "utf8");
    const statements = text.split("--> statement-breakpoint").slice(0, 2);
    expect(statements.join("")).toMatch(/ADD COLUMN "view_extras" smallint DEFAULT 63 NOT NULL;[\s\S]*SET DEFAULT 0;/);
    await query(db, sql`alter table issues drop column view_extras`);
    for (const statement of statements) await db.execute(sql.raw(statement));
    expect((await bitsOf(db, org.orgId))[issue.identifier]).toBe(ALL);
    const [row] = await query<{ id: string }>(db, sql`select id from issues where org_id = ${org.orgId} and identifier = ${issue.identifier}`);
    expect((await reads(db, org.orgId, row!.id)).discussion).toMatchObject({ commentsTotal: 1 });
    const fresh = await saveIssue(a, { title: "Newer", work: true, changeType: "feat", noDependency: "none" });
    expect((await bitsOf(db, org.orgId))[fresh.identifier]).toBe(0);
  });
});
