import { and, eq, inArray, sql } from "drizzle-orm";
import { attachmentFiles, linearLinks } from "../../../db/schema/index.ts";
import type { Config } from "../../config/index.ts";
import type { OrgCipher } from "../../crypto/index.ts";
import type { Services } from "../../context.ts";
import { MAX_FILE_BYTES } from "../../issues/attachments-files.ts";
import { sniffContentType } from "../../issues/attachments-sniff.ts";
import { outboundAgent, undici } from "../../outbound/address.ts";
import type { Download, FetchFile, SourceAttachment, SourceIssue } from "./stream.ts";

/**
 * Attachments that are files at the source come over as files (decision 060): the process that
 * holds the source's credential downloads them while it stages the pages, through the outbound
 * guard, with the credential sent only to the source's own origin, the body read up to the
 * attachment size limit and abandoned past it; the bytes are staged sealed under the org's key
 * (`import_staged_files`) and the apply copies them to `attachment_files`. A file over the limit,
 * one whose download fails, and a link (anything not on the source's own host) stay links.
 */
export type LinkReason = NonNullable<SourceAttachment["keptAsLink"]>;

export type { Download, FetchFile } from "./stream.ts";

/** How long one file may take to arrive. */
const DOWNLOAD_MS = 120_000;
/** Downloads in flight at once: one at a time left the fetch waiting on each file's round trips; more than a few would hold that many files (up to the size limit each) in memory. */
export const FILES_AT_ONCE = 4;

/**
 * GET `url` with `headers` (the source's credential), only when its origin is `home` (the
 * source's own: the credential goes nowhere else, redirects included) and only through the
 * outbound guard. The declared length and then the bytes as they stream are held to `limit`.
 */
export async function downloadFile(config: Pick<Config, "outboundAllowHosts">, url: string, home: string, headers: Record<string, string>, limit = MAX_FILE_BYTES): Promise<Download> {
  if (!sameOrigin(url, home)) return { keptAsLink: "failed" };
  try {
    const agent = agentFor(config, new URL(home).origin);
    const res = await undici().fetch(url, { headers, redirect: "manual", dispatcher: agent, signal: AbortSignal.timeout(DOWNLOAD_MS) });
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel();
      return { keptAsLink: "failed" };
    }
    if (Number(res.headers.get("content-length") ?? 0) > limit) {
      await res.body.cancel();
      return { keptAsLink: "tooLarge" };
    }
    const chunks: Buffer[] = [];
    let size = 0;
    // Leaving the loop cancels the stream: nothing past the limit is read.
    for await (const chunk of res.body) {
      size += chunk.length;
      if (size > limit) return { keptAsLink: "tooLarge" };
      chunks.push(Buffer.from(chunk));
    }
    return { bytes: Buffer.concat(chunks, size) };
  } catch {
    return { keptAsLink: "failed" };
  }
}

/**
 * One guarded agent per origin (and config), kept: a run's files reuse its connections instead of
 * one connection each (issue 29). The guard holds as before, since it runs at every connection;
 * idle connections close by themselves (undici's keep-alive timeout) and hold no process open.
 */
const agents = new WeakMap<Pick<Config, "outboundAllowHosts">, Map<string, ReturnType<typeof outboundAgent>>>();
function agentFor(config: Pick<Config, "outboundAllowHosts">, origin: string): ReturnType<typeof outboundAgent> {
  let byOrigin = agents.get(config);
  if (!byOrigin) agents.set(config, (byOrigin = new Map()));
  let agent = byOrigin.get(origin);
  if (!agent) {
    if (byOrigin.size >= 100) byOrigin.clear();
    byOrigin.set(origin, (agent = outboundAgent(config, origin)));
  }
  return agent;
}

export function sameOrigin(url: string, home: string): boolean {
  return URL.canParse(url) && URL.canParse(home) && new URL(url).origin === new URL(home).origin;
}

/**
 * The page's file attachments staged before the page is: one already a file here (its link
 * names an attachment with content, from an earlier run) is not fetched again; the rest are
 * fetched `FILES_AT_ONCE` at a time and staged together, one statement whenever
 * `STAGE_BATCH_BYTES` have arrived and one for the rest (so a page holds at most that much and
 * the files in flight in memory, and its files are a few statements, not one each: issue 29),
 * while the run is still fetching. Marks every attachment with what the apply makes of it
 * (`asFile` or `keptAsLink`).
 */
export async function stageFiles(services: Services, cipher: OrgCipher, runId: string, orgId: string, issues: SourceIssue[], fetchFile: FetchFile | undefined): Promise<void> {
  const all = issues.flatMap((i) => i.attachments);
  const files = all.filter((a) => a.file && fetchFile);
  const here = await filesHere(services, orgId, files.map((a) => a.id));
  for (const a of all) {
    if (!a.file || !fetchFile) a.keptAsLink = "link";
    else if (here.has(a.id)) a.asFile = "here";
  }
  const wanted = files.filter((a) => !here.has(a.id));
  let batch: { a: SourceAttachment; bytes: Buffer }[] = [];
  let batchBytes = 0;
  const flush = async () => {
    const rows = batch;
    batch = [];
    batchBytes = 0;
    if (rows.length > 0) await stageBatch(services, cipher, runId, orgId, rows);
  };
  let next = 0;
  const worker = async () => {
    for (let a = wanted[next++]; a; a = wanted[next++]) {
      const size = a.file?.size ?? null;
      const got = size !== null && size > MAX_FILE_BYTES ? ({ keptAsLink: "tooLarge" } as const) : await fetchFile!(a);
      if ("keptAsLink" in got) {
        a.keptAsLink = got.keptAsLink;
        continue;
      }
      batch.push({ a, bytes: got.bytes });
      batchBytes += got.bytes.length;
      if (batchBytes >= STAGE_BATCH_BYTES) await flush();
    }
  };
  await Promise.all(Array.from({ length: Math.min(FILES_AT_ONCE, wanted.length) }, worker));
  await flush();
}

/** Downloaded bytes held before they are staged together. */
const STAGE_BATCH_BYTES = 16 * 1024 * 1024;

/** Downloaded files staged in one statement. */
async function stageBatch(services: Services, cipher: OrgCipher, runId: string, orgId: string, rows: { a: SourceAttachment; bytes: Buffer }[]): Promise<void> {
  const values = sql.join(
    rows.map(({ a, bytes }) => sql`(${a.id}, ${sniffContentType(bytes)}, ${bytes.length}::int, ${cipher.encryptBytes(bytes)}::bytea)`),
    sql`, `,
  );
  // One statement, not a transaction of four: the share lock waits for a run being ended (its staging dropped) and then stages nothing.
  // Its commit does not wait for the WAL flush (decision 100): the page's staging, which commits
  // after it and waits, makes it durable; a crash before that loses the page too, and the run with it.
  await services.db.execute(sql`with async as (select set_config('synchronous_commit', 'off', true))
    insert into import_staged_files (run_id, source_id, org_id, content_type, size_bytes, content_enc)
    select ${runId}, v.source_id, ${orgId}, v.content_type, v.size_bytes, v.content_enc
    from (values ${values}) as v(source_id, content_type, size_bytes, content_enc), async
    where exists (select 1 from linear_import_runs where id = ${runId} and phase = 'fetching' for share)
    on conflict do nothing`);
  for (const { a } of rows) a.asFile = "staged";
}

/** Which of these source attachment ids already came over as files into the org. */
async function filesHere(services: Services, orgId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await services.db
    .select({ id: linearLinks.linearId })
    .from(linearLinks)
    .innerJoin(attachmentFiles, eq(attachmentFiles.attachmentId, linearLinks.retascId))
    .where(and(eq(linearLinks.orgId, orgId), eq(linearLinks.kind, "attachment"), inArray(linearLinks.linearId, ids)));
  return new Set(rows.map((r) => r.id));
}
