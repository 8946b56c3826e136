import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../../db/client.ts";
import type { Ctx, Services } from "../../context.ts";
import { withPrincipal } from "../../with-principal.ts";
import { downloadAttachmentFile, MAX_FILE_BYTES } from "../../issues/attachments-files.ts";
import { renderHtml } from "../../markdown/render.ts";
import { listAttachments } from "../../issues/attachments.ts";
import { humanCtx, humanPrincipal } from "../../orgs/access.ts";
import { useTestServices } from "../../testing/database.ts";
import { servicesFor, testConfig } from "../../testing/db.ts";
import { generateJiraProject, startFakeJira, type FakeJira } from "../../../test/fakes/jira.ts";
import { generateWorkspace } from "../../../test/fakes/linear-workspace.ts";
import { type FakeLinear, startFakeLinear } from "../../../test/fakes/linear.ts";
import { seedOrg } from "../../testing/fixtures.ts";
import { removeTemps, tempDir } from "../../testing/temp-dirs.ts";
import { waitFor } from "../../testing/wait.ts";
import { importExport } from "../import.ts";
import { dryRunJiraImport, startJiraImport } from "../jira/index.ts";
import { dryRunLinearImport, startLinearImport } from "../linear/index.ts";
import { sha256Hex, snapshotProject } from "../linear/testing.ts";
import { writeExport } from "../testing.ts";
import { applyImportRun } from "./apply-run.ts";
import { importStatus } from "./status.ts";
import { finishRun } from "./testing.ts";

/**
 * Attachments that are files at the source come over as files (decision 060): the fakes serve
 * real bytes at their own URLs (Linear's uploads host, Jira's attachment content), downloaded by
 * the process holding the credential, staged sealed, copied by the apply. Over the limit, failed,
 * or on another host: a link, and the run says why. Credentials go to the source's host only.
 */
const env = useTestServices();
afterAll(removeTemps);
let linear: FakeLinear;
let jira: FakeJira;
let services: Services;

beforeAll(async () => {
  [linear, jira] = await Promise.all([startFakeLinear({ workspace: generateWorkspace({ issues: 120, seed: 5 }) }), startFakeJira({ project: generateJiraProject({ issues: 30, key: "JFL" }) })]);
  const hosts = [new URL(linear.url).host, new URL(jira.url).host].join(",");
  services = servicesFor(env.tdb.database, { config: testConfig({ LINEAR_API_URL: linear.apiUrl, LINEAR_UPLOADS_URL: linear.url, RETASC_OUTBOUND_ALLOW_HOSTS: hosts }) });
}, 60_000);
afterAll(() => Promise.all([linear?.close(), jira?.close()]));

/** The run to its end: staged by this process, applied as the `linear.apply` job applies it. */
const finish = (ctx: Ctx, runId: string) => finishRun(services, ctx, runId);

const counted = async (orgId: string) =>
  (
    await query<{ attachments: number; files: number; staged: number }>(
      services.db,
      sql`select (select count(*)::int from attachments where org_id = ${orgId}) as attachments,
                 (select count(*)::int from attachment_files where org_id = ${orgId}) as files,
                 (select count(*)::int from import_staged_files where org_id = ${orgId}) as staged`,
    )
  )[0]!;

/** A PNG's signature then filler: sniffed as an image, like an upload. */
const png = (size: number) => Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(size - 8, 7)]);

describe("attachments as files, from Linear", () => {
  const shot = png(300_000);
  let orgId: string;
  let alice: Ctx;
  let projectId: string;

  it("copies a file under the limit with the same bytes; one over it, one that fails and one on another host stay links, and the run says why", async () => {
    const org = await seedOrg(services, { prefix: "MAIN" });
    orgId = org.orgId;
    alice = withPrincipal(services, humanPrincipal(org.orgId, org.agents.alice.userId, "cli"));
    const [first, second, third, fourth, fifth] = linear.workspace.issues;
    linear.addFile(first!, { title: "screenshot.png", bytes: shot });
    linear.addFile(second!, { title: "too-big.bin", bytes: Buffer.alloc(MAX_FILE_BYTES + 1, 1) });
    // No length sent: the limit holds while the bytes stream, and the rest is never read.
    linear.addFile(third!, { title: "endless.log", bytes: Buffer.alloc(48 * 1024 * 1024, 0x61), chunked: true });
    linear.addFile(fourth!, { title: "elsewhere.png", bytes: png(100), host: "localhost" });
    // On the uploads host, but not there: a download that fails.
    linear.addFile(fifth!, { title: "gone.png", bytes: png(100) }).url = `${linear.url}/uploads/no-such-file`;
    const links = linear.workspace.issues.flatMap((i) => i.attachments).filter((a) => !a.url.includes("/uploads/")).length;

    const dry = await dryRunLinearImport(alice, { apiKey: linear.apiKey, teamId: linear.workspace.team.id });
    expect(dry.counts).toMatchObject({ filesCopied: 4, linksKept: links + 1 });
    expect(dry.linkReasons).toEqual({ link: links + 1 });
    expect(linear.fileRequests).toEqual([]);

    const { runId } = await startLinearImport(alice, { apiKey: linear.apiKey, teamId: linear.workspace.team.id, newProject: { name: "Engineering" } });
    const status = await finish(alice, runId);
    projectId = status.projectId;
    expect(status).toMatchObject({ phase: "done", counts: { created: 120, filesCopied: 1, linksKept: links + 4 }, linkReasons: { link: links + 1, tooLarge: 2, failed: 1 } });

    const listed = await listAttachments(alice, { issue: `ENG-${first!.number}` });
    const file = listed.attachments.find((a) => a.title === "screenshot.png")!;
    expect(file).toMatchObject({ kind: "file", contentType: "image/png", size: shot.length, url: `/dash/attachments/${file.id}` });
    const download = await downloadAttachmentFile(alice, { attachment: file.id });
    expect(download.content.equals(shot)).toBe(true);
    expect(download.headers["content-type"]).toBe("image/png");
    for (const [issue, title] of [[second, "too-big.bin"], [third, "endless.log"], [fourth, "elsewhere.png"]] as const) {
      const kept = (await listAttachments(alice, { issue: `ENG-${issue!.number}` })).attachments.find((a) => a.title === title)!;
      expect(kept, title).toMatchObject({ kind: "link", url: issue!.attachments.at(-1)!.url });
    }

    // The key went to the uploads host only; the stream past the limit was dropped, not read to its end.
    expect(linear.fileRequests.filter((r) => r.host.startsWith("localhost"))).toEqual([]);
    expect(linear.fileRequests.every((r) => r.withKey && r.host === new URL(linear.url).host)).toBe(true);
    const endless = linear.fileRequests.find((r) => r.path.endsWith("endless.log"))!;
    expect(endless.sent).toBeLessThan(48 * 1024 * 1024);
    expect(await counted(orgId)).toMatchObject({ files: 1, staged: 0 });
  }, 300_000);

  it("a second run matches files on the source's attachment id: nothing fetched again, nothing copied twice", async () => {
    const before = await counted(orgId);
    const screenshot = () => linear.fileRequests.filter((r) => r.path.endsWith("screenshot.png")).length;
    const fetched = screenshot();
    const { runId } = await startLinearImport(alice, { apiKey: linear.apiKey, teamId: linear.workspace.team.id, projectId });
    expect(await finish(alice, runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 0, filesCopied: 0 } });
    expect(screenshot()).toBe(fetched);
    expect(await counted(orgId)).toEqual(before);
  }, 300_000);

  it("into an org restored from an export, a re-import keeps one file per attachment, with the same bytes", async () => {
    const file = await writeExport(alice, tempDir("retasc-files-"));
    const restored = await importExport(services, { file, "org-name": "Restored" });
    const before = await counted(restored.orgId);
    expect(before).toMatchObject({ files: 1 });
    const ctx = (await humanCtx(services, { orgId: restored.orgId, userId: alice.principal.userId!, runtime: "cli" })).ctx;
    const [project] = await query<{ id: string }>(services.db, sql`select id from projects where org_id = ${restored.orgId} and prefix = 'ENG'`);
    const { runId } = await startLinearImport(ctx, { apiKey: linear.apiKey, teamId: linear.workspace.team.id, projectId: project!.id });
    expect(await finish(ctx, runId)).toMatchObject({ phase: "done", counts: { created: 0 } });
    expect(await counted(restored.orgId)).toEqual(before);
    const got = await snapshotProject(services, restored.orgId, "ENG");
    const first = linear.workspace.issues[0]!;
    expect(got.get(`ENG-${first.number}`)!.attachments.map((a) => a.url)).toContain(`file:sha256:${sha256Hex(shot)}`);
  }, 300_000);

  it("an apply killed half way resumes without copying a file twice", async () => {
    const org = await seedOrg(services, { prefix: "MAIN" });
    const ctx = withPrincipal(services, humanPrincipal(org.orgId, org.agents.alice.userId, "cli"));
    // A second page's file too: Linear's pages hold 50 issues.
    linear.addFile(linear.workspace.issues[70]!, { title: "page-two.png", bytes: png(5_000) });
    // The crash: the second page's transaction fails as it commits its progress, as a worker killed there would leave it.
    await services.db.execute(sql.raw(`create or replace function crash_second_page() returns trigger language plpgsql as $$ begin if new.pages_applied = 2 and new.org_id = '${org.orgId}' then raise exception 'worker killed'; end if; return new; end $$`));
    await services.db.execute(sql.raw(`create trigger crash_second_page before update on linear_import_runs for each row execute function crash_second_page()`));
    const { runId } = await startLinearImport(ctx, { apiKey: linear.apiKey, teamId: linear.workspace.team.id, newProject: { name: "Engineering" } });
    await waitFor(async () => ((await importStatus(ctx, { runId })).phase !== "fetching" ? true : null), 120_000, "staged");
    await expect(applyImportRun(services, runId)).rejects.toThrow();
    const [stopped] = await query<{ pages_applied: number; phase: string }>(services.db, sql`select pages_applied, phase from linear_import_runs where id = ${runId}`);
    expect(stopped).toEqual({ pages_applied: 1, phase: "applying" });
    expect(await counted(org.orgId)).toMatchObject({ files: 1, staged: 1 });
    await services.db.execute(sql`drop trigger crash_second_page on linear_import_runs`);

    expect(await finish(ctx, runId)).toMatchObject({ phase: "done", counts: { created: 120, filesCopied: 2 } });
    expect(await counted(org.orgId)).toMatchObject({ files: 2, staged: 0 });
    const [dupes] = await query<{ n: number }>(services.db, sql`select count(*)::int as n from (select l.linear_id from linear_links l join attachment_files f on f.attachment_id = l.retasc_id where l.org_id = ${org.orgId} group by l.linear_id having count(*) > 1) d`);
    expect(dupes!.n).toBe(0);
  }, 300_000);
});

describe("files pasted into Linear text", () => {
  it("come over as files, and the description and comment name them here; a second run fetches and writes nothing", async () => {
    const org = await seedOrg(services, { prefix: "MAIN" });
    const ctx = withPrincipal(services, humanPrincipal(org.orgId, org.agents.alice.userId, "cli"));
    const inBody = linear.workspace.issues[20]!;
    const withComment = linear.workspace.issues.slice(21).find((i) => i.comments.length > 0)!;
    const diagram = png(4_000);
    const photo = png(6_000);
    const bodyUrl = linear.pasteFile(inBody, { title: "diagram.png", bytes: diagram });
    const commentUrl = linear.pasteFile(withComment, { title: "photo.png", bytes: photo, comment: withComment.comments[0]! });

    const { runId } = await startLinearImport(ctx, { apiKey: linear.apiKey, teamId: linear.workspace.team.id, newProject: { name: "Engineering" } });
    const status = await finish(ctx, runId);
    expect(status).toMatchObject({ phase: "done", counts: { created: 120 } });
    const got = await snapshotProject(services, org.orgId, "ENG");

    const fileIn = async (issue: typeof inBody, title: string) => (await listAttachments(ctx, { issue: `ENG-${issue.number}` })).attachments.find((a) => a.title === title)!;
    const a = await fileIn(inBody, "diagram.png");
    expect(a).toMatchObject({ kind: "file", contentType: "image/png", size: diagram.length, url: `/dash/attachments/${a.id}` });
    expect((await downloadAttachmentFile(ctx, { attachment: a.id })).content.equals(diagram)).toBe(true);
    const body = got.get(`ENG-${inBody.number}`)!.body!;
    expect(body).toContain(`![diagram.png](/dash/attachments/${a.id})`);
    expect(body).not.toContain(bodyUrl);
    // The Dash shows it as a link to the file here (images are never loaded inline).
    expect(renderHtml(body)).toContain(`<a href="/dash/attachments/${a.id}" rel="noopener noreferrer nofollow">diagram.png</a>`);

    const b = await fileIn(withComment, "photo.png");
    expect((await downloadAttachmentFile(ctx, { attachment: b.id })).content.equals(photo)).toBe(true);
    const comment = got.get(`ENG-${withComment.number}`)!.comments.find((c) => c.body.includes("photo.png"))!;
    expect(comment.body).toContain(`![photo.png](/dash/attachments/${b.id})`);
    expect(comment.body).not.toContain(commentUrl);

    const fetched = linear.fileRequests.length;
    const again = await startLinearImport(ctx, { apiKey: linear.apiKey, teamId: linear.workspace.team.id, projectId: status.projectId });
    expect(await finish(ctx, again.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 0, filesCopied: 0 } });
    expect(linear.fileRequests.slice(fetched).filter((r) => r.path.endsWith(".png") && /diagram|photo/.test(r.path))).toEqual([]);
    expect((await snapshotProject(services, org.orgId, "ENG")).get(`ENG-${inBody.number}`)!.body).toBe(body);
  }, 300_000);
});

describe("attachments as files, from Jira", () => {
  it("fetches content from the site with the credentials; a size over the limit is not fetched, another host not with them, a failure stays a link", async () => {
    const org = await seedOrg(services, { prefix: "MAIN" });
    const ctx = withPrincipal(services, humanPrincipal(org.orgId, org.agents.alice.userId, "cli"));
    const all = jira.project.issues.flatMap((i) => i.fields.attachment ?? []);
    expect(all.length).toBeGreaterThanOrEqual(4);
    const [big, elsewhere, gone] = all;
    big!.size = MAX_FILE_BYTES + 1;
    elsewhere!.content = elsewhere!.content.replace("127.0.0.1", "localhost");
    jira.files.delete(gone!.id);
    const creds = { site: jira.url, email: jira.email, apiToken: jira.apiToken, projectKey: "JFL" };

    const dry = await dryRunJiraImport(ctx, creds);
    expect(dry.counts).toMatchObject({ attachments: all.length, filesCopied: all.length - 2, linksKept: 2 });
    expect(dry.linkReasons).toEqual({ tooLarge: 1, link: 1 });
    expect(dry.leftBehind.join(" ")).toContain("over the 10 MiB attachment limit");

    const { runId } = await startJiraImport(ctx, { ...creds, newProject: { name: "Jira files" } });
    expect(await finish(ctx, runId)).toMatchObject({ phase: "done", counts: { filesCopied: all.length - 3, linksKept: 3 }, linkReasons: { tooLarge: 1, link: 1, failed: 1 } });
    const requested = jira.fileRequests.map((r) => r.path);
    expect(requested.some((p) => p.includes(big!.id))).toBe(false);
    expect(requested.some((p) => p.includes(elsewhere!.id))).toBe(false);
    expect(jira.fileRequests.every((r) => r.withCredentials)).toBe(true);
    const got = await snapshotProject(services, org.orgId, "JFL");
    const urls = [...got.values()].flatMap((i) => i.attachments.map((a) => a.url));
    expect(urls).toEqual(expect.arrayContaining([big!.content, elsewhere!.content, gone!.content]));
    expect(urls.filter((u) => u.startsWith("file:sha256:"))).toHaveLength(all.length - 3);
  }, 300_000);
});
