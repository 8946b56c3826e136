import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { callError, callOk, connectClient, inProcessFetch, inProcessOrigin } from "../mcp/testing.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { getAttachment, listAttachments, obsoleteAttachment, saveAttachment } from "./attachments.ts";
import { listComments, retractComment, saveComment } from "./comments.ts";
import { getIssue, saveIssue } from "./index.ts";
import { listLabels, saveLabel } from "./labels.ts";

const env = useTestServices();

describe("comments, labels, attachments", () => {
  it("threads comments and retracts without deleting; only the author may retract", async () => {
    const org = await seedOrg(env.services);
    const { alice, bob } = org.agents;
    const issue = await saveIssue(alice.ctx, { title: "t", work: true, changeType: "feat", noDependency: "none" });
    const top = await saveComment(alice.ctx, { issue: issue.identifier, body: "first" });
    const reply = await saveComment(bob.ctx, { issue: issue.identifier, body: "reply", parent: top.id });
    await expect(retractComment(bob.ctx, { comment: top.id, note: "nope" })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await retractComment(alice.ctx, { comment: top.id, note: "wrong issue" });
    const thread = await listComments(bob.ctx, { issue: issue.identifier });
    expect(thread.comments.map((c) => [c.body, c.parent, c.retracted, c.retractNote])).toEqual([
      ["first", null, true, "wrong issue"],
      ["reply", top.id, false, null],
    ]);
    expect(reply.parent).toBe(top.id);
  });

  it("labels are idempotent by name and replaced on the issue", async () => {
    const org = await seedOrg(env.services);
    const a = org.agents.alice.ctx;
    await saveLabel(a, { name: "bug", color: "#ff0000" });
    await saveLabel(a, { name: "bug" });
    const issue = await saveIssue(a, { title: "t", work: true, changeType: "feat", noDependency: "none", labels: ["bug", "ui"] });
    expect(issue.labels).toEqual(["bug", "ui"]);
    const relabeled = await saveIssue(a, { identifier: issue.identifier, labels: ["ui"] });
    expect(relabeled.labels).toEqual(["ui"]);
    expect((await listLabels(a)).labels).toEqual([
      expect.objectContaining({ name: "bug", color: "#ff0000", issues: 0 }),
      expect.objectContaining({ name: "ui", issues: 1 }),
    ]);
    // Each row carries the issue's org (decision 099): set by the insert; a row written without it
    // (an instance of the previous version) gets it from its issue; none may be left without it.
    const db = env.services.db;
    const orgOf = () => query<{ org_id: string | null }>(db, sql`select il.org_id from issue_labels il join issues i on i.id = il.issue_id where i.identifier = ${issue.identifier} and i.org_id = ${org.orgId}`);
    expect(await orgOf()).toEqual([{ org_id: org.orgId }]);
    const [row] = await query<{ id: string }>(db, sql`select id from issues where org_id = ${org.orgId} and identifier = ${issue.identifier}`);
    const [bug] = await query<{ id: string }>(db, sql`select id from labels where org_id = ${org.orgId} and name = 'bug'`);
    await db.execute(sql`insert into issue_labels (issue_id, label_id) values (${row!.id}, ${bug!.id})`);
    expect(await orgOf()).toEqual([{ org_id: org.orgId }, { org_id: org.orgId }]);
    await expect(db.execute(sql`update issue_labels set org_id = null where issue_id = ${row!.id}`)).rejects.toThrow();
  });

  it("attachments are obsoleted with a reason, never removed, and invisible to another org", async () => {
    const org = await seedOrg(env.services);
    const other = await seedOrg(env.services);
    const a = org.agents.alice.ctx;
    const issue = await saveIssue(a, { title: "t", work: true, changeType: "feat", noDependency: "none" });
    const link = await saveAttachment(a, { issue: issue.identifier, url: "https://example.com/spec", title: "Spec" });
    await obsoleteAttachment(a, { attachment: link.id, reason: "superseded" });
    const listed = await listAttachments(a, { issue: issue.identifier });
    expect(listed.attachments).toEqual([expect.objectContaining({ url: "https://example.com/spec", obsolete: true, obsoleteReason: "superseded" })]);
    await expect(getAttachment(other.agents.alice.ctx, { attachment: link.id })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(getIssue(other.agents.alice.ctx, { identifier: issue.identifier })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("save_attachment takes http(s) links only: script, data and file URLs are refused with INVALID_INPUT", async () => {
    const org = await seedOrg(env.services);
    const { alice } = org.agents;
    const issue = await saveIssue(alice.ctx, { title: "t", work: true, changeType: "feat", noDependency: "none" });
    const client = await connectClient(`${inProcessOrigin}/mcp`, alice.key, { fetch: inProcessFetch(env.services) });
    try {
      for (const url of ["javascript:alert(document.cookie)", "JavaScript:alert(1)", "data:text/html,<script>alert(1)</script>", "file:///etc/passwd", "vbscript:msgbox(1)", "ftp://example.com/x"]) {
        const error = await callError(client, "save_attachment", { issue: issue.identifier, url });
        expect({ url, code: error.code, message: error.message }).toEqual({
          url,
          code: "INVALID_INPUT",
          message: expect.stringContaining("url: only http:// and https:// links are accepted"),
        });
      }
      expect((await listAttachments(alice.ctx, { issue: issue.identifier })).attachments).toEqual([]);
      await callOk(client, "save_attachment", { issue: issue.identifier, url: "http://example.com/a" });
      await callOk(client, "save_attachment", { issue: issue.identifier, url: "https://example.com/b" });
      expect((await listAttachments(alice.ctx, { issue: issue.identifier })).attachments.map((a) => a.url)).toEqual([
        "http://example.com/a",
        "https://example.com/b",
      ]);
    } finally {
      await client.close();
    }
  });
});
