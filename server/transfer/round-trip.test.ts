import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { issues, orgs } from "../../db/schema/index.ts";
import { systemPrincipal } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { getIssue, listIssues, saveIssue } from "../issues/index.ts";
import { listComments } from "../issues/comments.ts";
import { humanCtx } from "../orgs/access.ts";
import { claimIssue, nextIssue } from "../queue/index.ts";
import { useTestServices } from "../testing/database.ts";
import { testDriver } from "../testing/db.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { removeTemps, tempDir } from "../testing/temp-dirs.ts";
import { listVerificationSettings, setVerification } from "../verification/settings.ts";
import { importExport } from "./import.ts";
import { setLink } from "./pipeline/apply-rows.ts";
import { comparable, exportText, furnishOrg, writeExport } from "./testing.ts";

const env = useTestServices();
afterAll(removeTemps);

const asSystem = (orgId: string) => withPrincipal(env.services, systemPrincipal(orgId));

describe("export → import → export", () => {
  it("gives the same document apart from the ids and times it names, and the imported org works", async () => {
    const org = await seedOrg(env.services, { prefix: "ENG" });
    await furnishOrg(org);
    // ENG-2 as a Linear import leaves it: its link row holds Linear's estimate.
    const [eng2] = await env.services.db.select({ id: issues.id }).from(issues).where(and(eq(issues.orgId, org.orgId), eq(issues.identifier, "ENG-2")));
    await setLink(env.services.db, org.orgId, "5b0c1e2a-0000-4000-8000-00000000e002", "issue", eng2!.id, "h", 3.5);
    // Its finish named what it delivered and CI passed it (decision 045).
    await env.services.db.update(issues).set({ verification: "passed", evidenceCommit: "0123abcd", evidenceBranch: "eng-2/fix", evidencePr: "12" }).where(eq(issues.id, eng2!.id));
    // ENG-2 is a fix (decision 059); ENG-4 was filed before changeType existed: none.
    await env.services.db.update(issues).set({ changeType: "fix" }).where(eq(issues.id, eng2!.id));
    await env.services.db.update(issues).set({ changeType: null }).where(and(eq(issues.orgId, org.orgId), eq(issues.identifier, "ENG-4")));
    // ENG verifies finishes in CI with its own settings.
    const engSettings = { mode: "ci" as const, checks: ["test", "lint"], windowMinutes: 90, stallMinutes: 30, quarantineAfter: 5, releaseStalled: true };
    await setVerification(asSystem(org.orgId), { projectId: org.projectId, ...engSettings });
    const dir = tempDir("retasc-transfer-");
    const first = await exportText(asSystem(org.orgId));
    const exportedEng2 = JSON.parse(first.split("\n").find((l) => l.includes('"identifier":"ENG-2"'))!.replace(/,$/, ""));
    expect(exportedEng2.linear).toEqual({ id: "5b0c1e2a-0000-4000-8000-00000000e002", estimate: 3.5 });
    expect(exportedEng2).toMatchObject({ changeType: "fix", verification: "passed", evidence: { commit: "0123abcd", branch: "eng-2/fix", pr: "12" } });
    expect(JSON.parse(first).projects.find((p: { prefix: string }) => p.prefix === "ENG").verification).toEqual(engSettings);
    const file = await writeExport(asSystem(org.orgId), dir);
    const imported = await importExport(env.services, { file, "org-name": "Restored" });
    expect(imported).toMatchObject({ people: 3, projects: 2, labels: 2, agents: 3, issues: 6, comments: 3 });
    expect(imported.orgId).not.toBe(org.orgId);
    const second = await exportText(asSystem(imported.orgId));
    expect(comparable(second)).toEqual(comparable(first));
    expect(JSON.parse(second).org.name).toBe("Restored");
    const csv = await exportText(asSystem(imported.orgId), { format: "csv", table: "issues" });
    expect(csv.split("\n").find((l) => l.startsWith("ENG-2,"))).toMatch(/,3\.5,fix$/);

    // Identifiers, threads and history are there, and the queue ranks the imported graph.
    const alice = (await humanCtx(env.services, { orgId: imported.orgId, userId: org.agents.alice.userId, runtime: "dash" })).ctx;
    const thread = await listComments(alice, { issue: "ENG-2" });
    expect(thread.comments.map((c) => [c.body, c.retracted])).toEqual([
      ["How do we start?", true],
      ["With tests.", false],
      ["Agreed.", false],
    ]);
    expect(thread.comments[1]!.parent).toBe(thread.comments[0]!.id);
    expect((await listVerificationSettings(alice)).map(({ projectId: _, ...s }) => s).sort((a, b) => a.mode.localeCompare(b.mode))).toEqual([
      engSettings,
      { mode: "off", checks: [], windowMinutes: 120, stallMinutes: 45, quarantineAfter: 3, releaseStalled: false },
    ]);
    expect(await getIssue(alice, { identifier: "ENG-4" })).toMatchObject({ changeType: null });
    expect(await getIssue(alice, { identifier: "ENG-2" })).toMatchObject({ changeType: "fix", verification: "passed", evidence: { commit: "0123abcd", branch: "eng-2/fix", pr: "12" } });
    const second3 = await getIssue(alice, { identifier: "ENG-3" });
    expect(second3).toMatchObject({ parent: "ENG-1", labels: ["bug", "ui"], status: "todo" });
    const listed = await listIssues(alice, {});
    expect(listed.issues.map((i) => i.identifier).sort()).toEqual(["ENG-1", "ENG-3", "ENG-4", "OPS-1"]);
    expect(await getIssue(alice, { identifier: "OPS-1" })).toMatchObject({ blockedBy: [{ identifier: "ENG-3", status: "todo" }], openBlockers: ["ENG-3"] });
    const carol = JSON.parse(second).people.find((p: { name: string }) => p.name === "Carol");
    expect(carol.member).toMatchObject({ role: "member", status: "suspended" });
    // ENG-3's blocker (ENG-2) is done, so it is ready; ENG-4 (urgent) goes first.
    const next = await nextIssue(alice, { allLanes: true });
    expect(next).toMatchObject({ identifier: "ENG-4", claimToken: expect.any(String) });
  });

  it("an issue in review keeps its review clock (review_since, the age floor) through export and import; an export from before it starts the clock at the import", async () => {
    const org = await seedOrg(env.services, { prefix: "REV" });
    const alice = org.agents.alice.ctx;
    const { identifier } = await saveIssue(alice, { title: "review me", work: true, changeType: "feat", noDependency: "a test" });
    const claim = await claimIssue(alice, { identifier });
    await saveIssue(alice, { identifier, claimToken: claim.claimToken, status: "review", assignee: org.agents.bob.userId, handoff: "built on rev-1/review-me" });
    // It entered review 23 hours ago: past 90% of a day, its floor is urgent.
    const entered = new Date(Date.now() - 23 * 3_600_000);
    await env.services.db.update(issues).set({ reviewSince: entered }).where(and(eq(issues.orgId, org.orgId), eq(issues.identifier, identifier)));
    const text = await exportText(asSystem(org.orgId));
    const line = text.split("\n").find((l) => l.includes(`"identifier":"${identifier}"`))!;
    expect(JSON.parse(line.replace(/,$/, ""))).toMatchObject({ status: "review", reviewSince: entered.toISOString() });
    const dir = tempDir("retasc-transfer-");
    const clockIn = async (orgId: string) => {
      const [row] = await env.services.db.select({ reviewSince: issues.reviewSince, ownLevel: issues.ownLevel, effectiveLevel: issues.effectiveLevel }).from(issues).where(and(eq(issues.orgId, orgId), eq(issues.identifier, identifier)));
      return row!;
    };
    const kept = await importExport(env.services, { file: await writeExport(asSystem(org.orgId), dir), "org-name": "Restored review" });
    expect(await clockIn(kept.orgId)).toEqual({ reviewSince: entered, ownLevel: 4, effectiveLevel: 4 });
    // An export written before reviewSince: the clock starts at the import, at high.
    const older = path.join(dir, "before-review-since.json");
    fs.writeFileSync(older, text.replace(/"reviewSince":("[^"]*"|null),/g, ""));
    expect(fs.readFileSync(older, "utf8")).not.toContain("reviewSince");
    const importing = Date.now();
    const started = await importExport(env.services, { file: older, "org-name": "Restored old review" });
    const clock = await clockIn(started.orgId);
    expect(clock.reviewSince!.getTime()).toBeGreaterThanOrEqual(importing - 1_000);
    expect(clock).toMatchObject({ ownLevel: 3, effectiveLevel: 3 });
  });

  it("holds no secret, and refuses a member: owners and admins export", async () => {
    const org = await seedOrg(env.services);
    await furnishOrg(org);
    const text = await exportText(asSystem(org.orgId));
    for (const agent of Object.values(org.agents)) expect(text).not.toContain(agent.key);
    expect(text).not.toMatch(/keyHash|key_hash|tokenHash|wrapped/i);
    const bob = (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents.bob.userId, runtime: "cli" })).ctx;
    await expect(exportText(bob)).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(exportText(org.agents.alice.ctx)).resolves.toContain('"format":"retasc-export"');
  });

  it("CSV: one row per issue and per comment, formulas defused", async () => {
    const org = await seedOrg(env.services, { prefix: "CSV" });
    await furnishOrg(org);
    const issuesCsv = await exportText(asSystem(org.orgId), { format: "csv" });
    const lines = issuesCsv.trimEnd().split("\n");
    expect(lines[0]).toBe("identifier,project,title,status,priority,work,assignee,author,parent,labels,blocked_by,due_at,created_at,updated_at,cancel_reason,body,estimate,change_type");
    expect(lines.filter((l) => /^CSV-\d+,/.test(l))).toHaveLength(5);
    const row = (identifier: string) => lines.find((l) => l.startsWith(`${identifier},`))!.split(",");
    expect(row("CSV-1").slice(0, 6)).toEqual(["CSV-1", "CSV", "Epic", "todo", "0", "false"]);
    expect(row("CSV-3").slice(0, 11)).toEqual(["CSV-3", "CSV", "Second", "todo", "0", "true", expect.stringMatching(/^alice-/), expect.stringMatching(/^alice-/), "CSV-1", "bug; ui", "CSV-2"]);
    expect(row("CSV-5")[10]).toBe("CSV-3");
    const commentsCsv = await exportText(asSystem(org.orgId), { format: "csv", table: "comments" });
    expect(commentsCsv.trimEnd().split("\n")).toHaveLength(4);
    expect(commentsCsv).toContain("asked twice");
  });

  it("CSV: a cell a spreadsheet would run as a formula is defused", async () => {
    const org = await seedOrg(env.services, { prefix: "FX" });
    await saveIssue(org.agents.alice.ctx, { title: "=HYPERLINK(\"https://evil.example\")", work: true, changeType: "feat", noDependency: "x" });
    const text = await exportText(asSystem(org.orgId), { format: "csv" });
    expect(text).toContain(`"'=HYPERLINK(""https://evil.example"")"`);
  });

  it("refuses a file that is not an export, and an unknown version", async () => {
    const dir = tempDir("retasc-transfer-");
    const notJson = `${dir}/a.json`;
    fs.writeFileSync(notJson, "hello");
    await expect(importExport(env.services, { file: notJson, "org-name": "x" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    const future = `${dir}/b.json`;
    fs.writeFileSync(future, JSON.stringify({ format: "retasc-export", version: 99, org: { timeZone: "UTC" } }));
    await expect(importExport(env.services, { file: future, "org-name": "x" })).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("version 99") });
  });
});

describe("imports of one person", () => {
  // PGlite runs one transaction at a time, so two imports never overlap there.
  it.skipIf(testDriver !== "postgres")("run one at a time on every instance: a second at once, on another pool, is refused RATE_LIMITED (decision 037)", async () => {
    const org = await seedOrg(env.services, { prefix: "ONE" });
    await furnishOrg(org);
    const file = await writeExport(asSystem(org.orgId), tempDir("retasc-transfer-"));
    const other = await env.tdb.openAnother(2);
    try {
      const owner = { ownerUserId: org.agents.alice.userId, ownerEmail: "someone@example.com" };
      const [first, second] = await Promise.allSettled([
        importExport(env.services, { file, "org-name": "First" }, owner),
        importExport({ ...env.services, db: other.db }, { file, "org-name": "Second" }, owner),
      ]);
      const refused = [first, second].filter((r) => r.status === "rejected");
      expect(refused, "one of the two imports is refused").toHaveLength(1);
      expect((refused[0] as PromiseRejectedResult).reason).toMatchObject({ code: "RATE_LIMITED", message: "another import of yours is still running: one at a time per person" });
    } finally {
      await other.close();
    }
  });
});

describe("a malformed export", () => {
  it("is refused INVALID_INPUT naming the record, and leaves nothing behind", async () => {
    const org = await seedOrg(env.services, { prefix: "BAD" });
    await furnishOrg(org);
    const dir = tempDir("retasc-transfer-");
    const lines = (await exportText(asSystem(org.orgId))).split("\n");
    const at = lines.findIndex((l) => l.startsWith('{"id"') && l.includes('"identifier":"BAD-3"'));
    const record = JSON.parse(lines[at]!.replace(/,$/, ""));
    lines[at] = JSON.stringify({ ...record, status: "finished", title: null }) + ",";
    const file = `${dir}/bad.json`;
    fs.writeFileSync(file, lines.join("\n"));
    const before = await env.services.db.select().from(orgs);
    await expect(importExport(env.services, { file, "org-name": "Broken" })).rejects.toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringMatching(/^record \d+ \(issues\): issue BAD-3: (title|status) /),
    });
    expect(await env.services.db.select().from(orgs)).toHaveLength(before.length);
  });

  it("is held to what the live tools take: a script link, an oversized comment, a branch git refuses, a file that is not base64 (finding 8)", async () => {
    const org = await seedOrg(env.services, { prefix: "CHK" });
    await furnishOrg(org);
    const dir = tempDir("retasc-transfer-");
    const text = await exportText(asSystem(org.orgId));
    const line = text.split("\n").find((l) => l.includes('"identifier":"CHK-2"'))!;
    const issue = JSON.parse(line.replace(/,$/, ""));
    const cases: [string, (i: any) => void, RegExp][] = [
      ["javascript:", (i) => (i.attachments.find((a: { url: string | null }) => a.url)!.url = "javascript:alert(document.cookie)"), /issue CHK-2: attachments\.\d+\.url only http:\/\/ and https:\/\/ links are accepted/],
      ["data:", (i) => (i.attachments.find((a: { url: string | null }) => a.url)!.url = "data:text/html,<script>alert(1)</script>"), /attachments\.\d+\.url only http/],
      ["a comment over 50,000 characters", (i) => (i.comments[0].body = "x".repeat(50_001)), /issue CHK-2: comments\.0\.body /],
      ["a title over 500 characters", (i) => (i.title = "t".repeat(501)), /issue CHK-2: title /],
      ["a changeType save_issue refuses", (i) => (i.changeType = "feature"), /issue CHK-2: changeType /],
      ["a branch git refuses", (i) => (i.checkpoints[0].branch = "-x..y"), /issue CHK-2: checkpoints\.0\.branch not a branch name git accepts/],
      ["a NUL in a comment", (i) => (i.comments[0].body = "before\u0000after"), /issues: comments\.0\.body: contains a NUL character/],
      ["a file that is not base64", (i) => (i.attachments.find((a: { file: unknown }) => a.file)!.file.contentBase64 = "not base64!"), /contentBase64 is not valid base64/],
    ];
    for (const [what, change, refusal] of cases) {
      const changed = structuredClone(issue);
      change(changed);
      const file = `${dir}/checked.json`;
      fs.writeFileSync(file, text.replace(line, `${JSON.stringify(changed)},`));
      const before = await env.services.db.select().from(orgs);
      await expect(importExport(env.services, { file, "org-name": "Checked" }), what).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringMatching(refusal) });
      expect(await env.services.db.select().from(orgs), what).toHaveLength(before.length);
    }
  });
});
