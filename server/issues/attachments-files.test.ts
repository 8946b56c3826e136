import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { issueDetail } from "../dash/issue.ts";
import { humanCtx } from "../orgs/access.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { listAttachments, saveAttachment } from "./attachments.ts";
import { downloadAttachmentFile, getAttachmentFile, MAX_FILE_BYTES, saveAttachmentFile } from "./attachments-files.ts";
import { sniffContentType } from "./attachments-sniff.ts";
import { saveIssue } from "./index.ts";

const env = useTestServices();

const b64 = (text: string | Buffer) => Buffer.from(text).toString("base64");
/** A real 1×1 PNG. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");

async function issueIn(prefix: string) {
  const org = await seedOrg(env.services, { prefix });
  const issue = await saveIssue(org.agents.alice.ctx, { title: "Screenshots", work: true, changeType: "feat", noDependency: "alone" });
  return { org, ctx: org.agents.alice.ctx, identifier: issue.identifier };
}

describe("sniffing", () => {
  it("names a type from the bytes, whatever the file is called", () => {
    const cases: [Buffer | string, string][] = [
      [PNG, "image/png"],
      [Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]), "image/jpeg"],
      ["GIF89a\x01\x00", "image/gif"],
      [Buffer.concat([Buffer.from("RIFF\x24\x00\x00\x00WEBPVP8 ", "latin1")]), "image/webp"],
      ["%PDF-1.7\n", "application/pdf"],
      [Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14]), "application/zip"],
      [Buffer.from([0x1f, 0x8b, 0x08, 0]), "application/gzip"],
      ['{"trace":[1,2]}', "application/json"],
      ["2026-12-01 ERROR boom\nat line 3\n", "text/plain; charset=utf-8"],
      ["  <!DOCTYPE html><script>alert(1)</script>", "text/html"],
      ["<html><body>hi</body></html>", "text/html"],
      ['<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', "image/svg+xml"],
      ["<svg onload=alert(1)>", "image/svg+xml"],
      ['<?xml version="1.0"?><note/>', "application/xml"],
      [Buffer.from([0, 1, 2, 3, 0xfe]), "application/octet-stream"],
      ["{ not json", "text/plain; charset=utf-8"],
    ];
    for (const [bytes, type] of cases) expect(sniffContentType(Buffer.from(bytes as string, "latin1")), String(bytes).slice(0, 20)).toBe(type);
  });
});

describe("file attachments", () => {
  it("round-trips the bytes, sealed at rest: the stored column holds neither the bytes nor their base64", async () => {
    const { ctx, identifier, org } = await issueIn("FIL");
    const log = Buffer.from("build log: the secret marker GREPPABLE-PLAINTEXT-42\n".repeat(50));
    const saved = await saveAttachmentFile(ctx, { issue: identifier, filename: "build.log", contentBase64: b64(log) });
    expect(saved).toMatchObject({ kind: "file", title: "build.log", contentType: "text/plain; charset=utf-8", size: log.length, url: `/dash/attachments/${saved.id}` });
    const got = await getAttachmentFile(ctx, { attachment: saved.id });
    expect(Buffer.from(got.contentBase64, "base64").equals(log)).toBe(true);
    expect(got).toMatchObject({ filename: "build.log", contentType: "text/plain; charset=utf-8", size: log.length, issue: identifier });

    const [stored] = await query<{ content: string; org_id: string }>(
      env.services.db,
      sql`select encode(content_enc, 'hex') as content, org_id from attachment_files where attachment_id = ${saved.id}`,
    );
    expect(stored!.org_id).toBe(org.orgId);
    const hex = stored!.content;
    expect(hex).not.toContain(Buffer.from("GREPPABLE-PLAINTEXT-42").toString("hex"));
    expect(hex).not.toContain(Buffer.from(b64(log).slice(0, 40)).toString("hex"));
    // The filename is sealed too (attachments.title_enc).
    const [title] = await query<{ title_enc: string }>(env.services.db, sql`select title_enc from attachments where id = ${saved.id}`);
    expect(title!.title_enc).not.toContain("build.log");
  });

  it("takes 10 MiB and refuses a byte more, and bad base64, with INVALID_INPUT", async () => {
    const { ctx, identifier } = await issueIn("BIG");
    const limit = Buffer.alloc(MAX_FILE_BYTES, 0x61);
    expect((await saveAttachmentFile(ctx, { issue: identifier, filename: "a.txt", contentBase64: limit.toString("base64") })).size).toBe(MAX_FILE_BYTES);
    const over = saveAttachmentFile(ctx, { issue: identifier, filename: "b.txt", contentBase64: Buffer.alloc(MAX_FILE_BYTES + 1, 0x61).toString("base64") });
    await expect(over).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("at most 10485760 bytes") });
    for (const bad of ["not base64!", "abc", "", "ab=c"]) {
      await expect(saveAttachmentFile(ctx, { issue: identifier, filename: "c.txt", contentBase64: bad }), bad).rejects.toMatchObject({ code: "INVALID_INPUT" });
    }
    // Line breaks, as `base64` wraps its output, are fine.
    const wrapped = b64("hello world, wrapped").replace(/(.{8})/g, "$1\n");
    expect((await saveAttachmentFile(ctx, { issue: identifier, filename: "d.txt", contentBase64: wrapped })).size).toBe(20);
    await expect(saveAttachmentFile(ctx, { issue: identifier, filename: "../etc/passwd", contentBase64: b64("x") })).rejects.toMatchObject({ name: "ZodError" });
  });

  it("serves images inline and everything else as a download; HTML and SVG never as a page", async () => {
    const { ctx, identifier } = await issueIn("DLD");
    const download = async (filename: string, content: Buffer | string) => {
      const saved = await saveAttachmentFile(ctx, { issue: identifier, filename, contentBase64: b64(content) });
      return (await downloadAttachmentFile(ctx, { attachment: saved.id })).headers;
    };
    expect(await download("shot.png", PNG)).toMatchObject({ "content-type": "image/png", "x-content-type-options": "nosniff" });
    expect((await download("shot.png", PNG))["content-disposition"]).toMatch(/^inline; /);
    for (const [name, markup] of [
      ["report.html", "<!doctype html><script>document.cookie</script>"],
      ["shot.png", "<html><script>alert(1)</script></html>"], // a lying name changes nothing
      ["logo.svg", "<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'/>"],
    ] as const) {
      const headers = await download(name, markup);
      expect(headers, name).toMatchObject({ "content-type": "application/octet-stream", "x-content-type-options": "nosniff" });
      expect(headers["content-disposition"], name).toMatch(/^attachment; filename="/);
      expect(headers["content-security-policy"]).toContain("sandbox");
    }
    const pdf = await download("spec ü.pdf", "%PDF-1.4 ...");
    expect(pdf).toMatchObject({ "content-type": "application/pdf" });
    expect(pdf["content-disposition"]).toBe(`attachment; filename="spec _.pdf"; filename*=UTF-8''spec%20%C3%BC.pdf`);
  });

  it("is NOT_FOUND from another org, like a missing one; a link is not a file", async () => {
    const mine = await issueIn("MIN");
    const theirs = await issueIn("THR");
    const saved = await saveAttachmentFile(mine.ctx, { issue: mine.identifier, filename: "a.png", contentBase64: b64(PNG) });
    await expect(getAttachmentFile(theirs.ctx, { attachment: saved.id })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(downloadAttachmentFile(theirs.ctx, { attachment: saved.id })).rejects.toMatchObject({ code: "NOT_FOUND" });
    const link = await saveAttachment(mine.ctx, { issue: mine.identifier, url: "https://example.com/pr/1", title: "PR" });
    await expect(getAttachmentFile(mine.ctx, { attachment: link.id })).rejects.toMatchObject({ code: "NOT_FOUND", hint: expect.stringContaining("get_attachment") });
  });

  it("lists links and files together, and the Dash issue page shows both", async () => {
    const { ctx, identifier, org } = await issueIn("LST");
    await saveAttachment(ctx, { issue: identifier, url: "https://example.com/pr/7", title: "the pull request" });
    const file = await saveAttachmentFile(ctx, { issue: identifier, filename: "shot.png", contentBase64: b64(PNG) });
    const listed = await listAttachments(ctx, { issue: identifier });
    expect(listed.attachments.map((a) => [a.kind, a.title, a.contentType, a.size])).toEqual([
      ["link", "the pull request", null, null],
      ["file", "shot.png", "image/png", PNG.length],
    ]);
    const dash = (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents.bob.userId, runtime: "dash" })).ctx;
    const detail = await issueDetail(dash, { identifier });
    expect(detail.attachments).toMatchObject([
      { kind: "link", url: "https://example.com/pr/7", thumbnail: false },
      { kind: "file", url: `/dash/attachments/${file.id}`, title: "shot.png", size: PNG.length, thumbnail: true },
    ]);
  });
});
