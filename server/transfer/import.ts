import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { and, eq, sql, type SQL } from "drizzle-orm";
import { z } from "zod";
import { query, type Db } from "../../db/client.ts";
import {
  activity,
  importGhosts,
  agentKeys,
  attachmentFiles,
  attachments,
  checkpoints,
  comments,
  issueLabels,
  issues,
  labels,
  linearLinks,
  members,
  projectPrefixAliases,
  projects,
  relations,
  user,
} from "../../db/schema/index.ts";
import type { Ctx, Services } from "../context.ts";
import { randomToken, sha256, type OrgCipher } from "../crypto/index.ts";
import { DomainError, invalidInput } from "../errors.ts";
import { decodeFile, downloadPath } from "../issues/attachments-files.ts";
import { sniffContentType } from "../issues/attachments-sniff.ts";
import { rankingColumns, reviewClockOf, reviewSinceAfter } from "../issues/levels.ts";
import { rerank } from "../issues/ranking.ts";
import { isTerminal } from "../issues/store.ts";
import { actorOf, requireRole } from "../orgs/access.ts";
import { createOrg, ensureUser } from "../orgs/index.ts";
import { checkRecord } from "./checks.ts";
import type { ExportIssue, ExportPerson } from "./format.ts";
import { orderedIds } from "./ordered-ids.ts";
import { openExport, type ExportEntry, type ReadLimits } from "./read-export.ts";
import { emailHash, placeholderUser } from "./pipeline/ghosts.ts";
import { gatesDependents, isOpen } from "../../db/schema/dispatch.ts";

export const importInput = z.object({
  file: z.string({ error: "--file is required" }).trim().min(1, "--file is required"),
  "org-name": z.string({ error: "--org-name is required" }).trim().min(1, "--org-name is required").max(100),
});

/**
 * The largest export the Dash takes as an upload. The form is streamed to a private file as it
 * arrives (never held in memory) and the export read from it a record at a time; a larger org
 * comes back through `npm run admin -- import`, which reads the same way with wider limits.
 */
export const UPLOAD_MAX_BYTES = 32 * 1024 * 1024;
/** The path the upload is posted to, and what the form around the file may add to its body. */
export const UPLOAD_PATH = "/dash/settings/transfer";
export const UPLOAD_FORM_SLACK_BYTES = 64 * 1024;

/**
 * What reading one uploaded export may cost (read-export.ts): a record no larger than the upload,
 * parsing at most 200,000 values at once (an issue with thousands of comments holds far fewer),
 * and a turn of the event loop for other requests every 10 ms.
 */
export const UPLOAD_READ_LIMITS: ReadLimits = { recordBytes: UPLOAD_MAX_BYTES, recordValues: 200_000, depth: 32, sliceMs: 10 };

const FLUSH_ISSUES = 200;
const FLUSH_ROWS = 1000;
const RERANK_CHUNK = 2000;

/**
 * Brings a JSON export back as a new org, in one transaction (all or nothing): people matched
 * on email (created when new, as the operator commands do), every record checked as the live
 * tools check what they write (checks.ts) and re-encrypted under the new org's key, timestamps
 * and identifiers as exported, new ids throughout (so an org can be imported beside the one it
 * came from). Imported agent keys keep their record but no secret: nobody holds one, so they
 * authenticate nothing until revoked and replaced. The file is read a record at a time within
 * `limits` (read-export.ts).
 */
export async function importExport(
  services: Services,
  raw: z.input<typeof importInput>,
  options: { ownerUserId?: string; ownerEmail?: string; limits?: ReadLimits } = {},
) {
  const input = importInput.parse(raw);
  const { header, entries } = await openExport(input.file, options.limits);
  const now = services.clock.now();
  return services.db.transaction(async (tx) => {
    // One import per person at a time on every instance (the Dash's uploads; decision 037).
    if (options.ownerUserId !== undefined) await lockImporter(tx, options.ownerUserId);
    const newOrg = { name: input["org-name"], timeZone: header.org.timeZone, ownerUserId: options.ownerUserId, ownerEmail: options.ownerEmail };
    const run = new ImportRun(services, tx, newOrg, orderedIds(now), now);
    let position = 0;
    for await (const entry of entries) {
      position++;
      try {
        await run.take(entry);
      } catch (error) {
        throw malformed(error, `record ${position} (${entry.section})`);
      }
    }
    const orgId = await run.finish().catch((error: unknown) => {
      throw malformed(error, "the export's last records");
    });
    return { orgId, ...run.counts };
  });
}

/** The form an upload arrives in, saved into a private folder by the door that reads it. */
export interface SavedUpload {
  orgName: string;
  /** The saved file and its size in bytes (cut at the limit, and `truncated`, when larger), or null when none was chosen. */
  file: { path: string; bytes: number; truncated: boolean } | null;
}

/**
 * The Dash's import of an uploaded export into a new org the uploader owns (decision 037). In
 * this order, so a refusal costs nothing: the uploader must be an owner or admin of the org they
 * are in (as for export); they may run one import at a time (per process here, on every instance
 * under a database lock) and the process `IMPORT_UPLOADS_AT_ONCE`, or it is refused
 * `RATE_LIMITED` saying which; only then is the body read, by `save`, into a private temporary
 * folder removed afterwards, and imported as the admin command does, within UPLOAD_READ_LIMITS.
 */
export async function importUpload(ctx: Ctx, save: (dir: string) => Promise<SavedUpload>) {
  const actor = await actorOf(ctx);
  requireRole(actor, ["owner", "admin"], "importing an export");
  const release = takeImportSlot(ctx.config, actor.userId);
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), "retasc-import-"));
  try {
    const upload = await save(dir);
    const orgName = upload.orgName.trim();
    if (!orgName || orgName.length > 100) throw invalidInput("the new org needs a name of 1 to 100 characters", "Name the org the export becomes.");
    const { file } = upload;
    if (!file || file.bytes === 0) throw invalidInput("no file was chosen", "Choose the .json file the Export card downloads.");
    if (file.truncated || file.bytes > UPLOAD_MAX_BYTES) {
      throw invalidInput(
        `the file is larger than ${UPLOAD_MAX_BYTES} bytes, the most an upload may be (32 MiB)`,
        "A larger export comes back through `npm run admin -- import --file <export.json> --org-name <name>` on the server.",
      );
    }
    const [uploader] = await ctx.db.select({ email: user.email }).from(user).where(eq(user.id, actor.userId));
    return await importExport(ctx, { file: file.path, "org-name": orgName }, { ownerUserId: actor.userId, ownerEmail: uploader?.email, limits: UPLOAD_READ_LIMITS });
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true });
    release();
  }
}

/** The Dash's imports running in this process, and whose. */
const running = { count: 0, people: new Set<string>() };

/** A place for one upload of `userId` in this process, or RATE_LIMITED saying why not; the returned function frees it. */
function takeImportSlot(config: Services["config"], userId: string): () => void {
  if (running.people.has(userId)) throw busy("person");
  if (running.count >= config.IMPORT_UPLOADS_AT_ONCE) throw busy("server", config.IMPORT_UPLOADS_AT_ONCE);
  running.count++;
  running.people.add(userId);
  let freed = false;
  return () => {
    if (freed) return;
    freed = true;
    running.count--;
    running.people.delete(userId);
  };
}

function busy(reason: "person" | "server", limit = 1): DomainError {
  return reason === "person"
    ? new DomainError("RATE_LIMITED", "another import of yours is still running: one at a time per person", "Wait until it finishes (its page comes back when it does), then try again.", { reason, limit })
    : new DomainError("RATE_LIMITED", `this server is already importing ${limit} exports, as many as it takes at once`, "Try again in a minute.", { reason, limit });
}

/** Holds the person's import lock to the end of the transaction, or refuses when another instance holds it. */
async function lockImporter(tx: Db, userId: string): Promise<void> {
  const [row] = await query<{ locked: boolean }>(tx, sql`select pg_try_advisory_xact_lock(hashtextextended(${`retasc:import:${userId}`}, 0)) as locked`);
  if (!row?.locked) throw busy("person");
}

/**
 * A record the import cannot take (a field missing or of the wrong type, a value the schema
 * refuses) is a bad file, said as such with where it is, never a stack trace.
 */
function malformed(error: unknown, where: string): DomainError {
  if (error instanceof DomainError) return new DomainError(error.code, `${where}: ${error.message}`, error.hint, error.details);
  return invalidInput(`${where} is malformed`, "Pass the file as the export wrote it; an edited export must keep every field of docs/export-format.md.");
}

type Row<T extends { $inferInsert: unknown }> = T["$inferInsert"];

class ImportRun {
  private orgId: string | null = null;
  private cipher: OrgCipher | null = null;
  private readonly people: { person: ExportPerson; userId: string; placeholder: boolean }[] = [];
  /** Old id → new id, for every kind of id the export names (people, keys, issues, comments). */
  private readonly ids = new Map<string, string>();
  private readonly issueByIdentifier = new Map<string, string>();
  private readonly projectByPrefix = new Map<string, string>();
  /** Every prefix a project of the export has or had (decision 089). */
  private readonly prefixesTaken = new Set<string>();
  private readonly labelByName = new Map<string, string>();
  private readonly parents: { id: string; parent: string }[] = [];
  private readonly edges: { sourceId: string; target: string; type: "blocks" | "related" | "duplicate"; createdAt: Date }[] = [];
  private readonly buffer = {
    issues: [] as Row<typeof issues>[],
    linearLinks: [] as Row<typeof linearLinks>[],
    issueLabels: [] as Row<typeof issueLabels>[],
    comments: [] as Row<typeof comments>[],
    attachments: [] as Row<typeof attachments>[],
    attachmentFiles: [] as Row<typeof attachmentFiles>[],
    checkpoints: [] as Row<typeof checkpoints>[],
    activity: [] as Row<typeof activity>[],
  };
  readonly counts = { people: 0, projects: 0, labels: 0, agents: 0, issues: 0, comments: 0, activity: 0 };

  constructor(
    private readonly services: Services,
    private readonly tx: Db,
    /**
     * ownerUserId and ownerEmail: who imports from the Dash, owner whatever the export says of
     * them. Anyone else the export names comes in as a placeholder (decision 031).
     */
    private readonly newOrg: { name: string; timeZone: string; ownerUserId?: string; ownerEmail?: string },
    private readonly newId: () => string,
    private readonly now: Date,
  ) {}

  /** The new id for an old one, made on first sight (a reply may come before its thread's root). */
  private idFor(old: string): string {
    let id = this.ids.get(old);
    if (!id) this.ids.set(old, (id = this.newId()));
    return id;
  }
  private known = (old: string | null | undefined): string | null => (old ? (this.ids.get(old) ?? null) : null);

  /** Ids inside activity facts and detail (holders, keys, comments) point at the new rows. */
  private remap(value: unknown): unknown {
    if (typeof value === "string") return this.ids.get(value) ?? value;
    if (Array.isArray(value)) return value.map((v) => this.remap(v));
    if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.remap(v)]));
    return value;
  }

  async take(unchecked: ExportEntry): Promise<void> {
    const entry = { section: unchecked.section, record: checkRecord(unchecked.section, unchecked.record) } as ExportEntry;
    if (entry.section === "people") return this.person(entry.record);
    const { tx } = this;
    const orgId = await this.org();
    const cipher = this.cipher!;
    switch (entry.section) {
      case "projects": {
        const p = entry.record;
        const id = this.newId();
        const v = p.verification;
        await tx.insert(projects).values({
          id,
          orgId,
          name: p.name,
          prefix: p.prefix,
          nextNumber: p.nextNumber,
          createdAt: new Date(p.createdAt),
          ...(v ? { verificationMode: v.mode, verificationChecks: v.checks, verificationWindowMinutes: v.windowMinutes, stallMinutes: v.stallMinutes, quarantineAfter: v.quarantineAfter, releaseStalled: v.releaseStalled } : {}),
        });
        // Old prefixes go on naming its issues (decision 089): a prefix, current or old, names one project.
        for (const prefix of [p.prefix, ...(p.oldPrefixes ?? [])]) {
          if (this.prefixesTaken.has(prefix)) throw invalidInput(`prefix ${prefix} names two projects of the export`, "Export the org again; the file was changed.");
          this.prefixesTaken.add(prefix);
        }
        if (p.oldPrefixes?.length) await tx.insert(projectPrefixAliases).values(p.oldPrefixes.map((prefix) => ({ orgId, prefix, projectId: id })));
        this.projectByPrefix.set(p.prefix, id);
        this.counts.projects++;
        return;
      }
      case "labels": {
        const l = entry.record;
        const id = this.newId();
        await tx.insert(labels).values({ id, orgId, name: l.name, color: l.color, createdAt: new Date(l.createdAt) });
        this.labelByName.set(l.name, id);
        this.counts.labels++;
        return;
      }
      case "agents": {
        const a = entry.record;
        const userId = this.known(a.userId);
        if (!userId) throw invalidInput(`agent ${a.id} belongs to nobody in the export`, "Export the org again; the file is incomplete.");
        await tx.insert(agentKeys).values({
          id: this.idFor(a.id),
          orgId,
          projectId: a.project ? (this.projectByPrefix.get(a.project) ?? null) : null,
          userId,
          runtime: a.runtime,
          // A hash of a secret nobody is given: the record comes back, the power to sign in does not.
          keyHash: sha256(randomToken("rtsc_")),
          prefix: a.keyPrefix,
          claimCap: a.claimCap,
          parentKeyId: a.parentKeyId ? this.idFor(a.parentKeyId) : null,
          createdAt: new Date(a.createdAt),
          lastUsedAt: a.lastUsedAt ? new Date(a.lastUsedAt) : null,
          revokedAt: a.revokedAt ? new Date(a.revokedAt) : null,
          expiresAt: a.expiresAt ? new Date(a.expiresAt) : null,
        });
        this.counts.agents++;
        return;
      }
      case "issues":
        this.issue(orgId, cipher, entry.record);
        if (this.buffer.issues.length >= FLUSH_ISSUES || this.buffered() >= FLUSH_ROWS) await this.flush();
        return;
      case "activity": {
        const a = entry.record;
        this.buffer.activity.push({
          orgId,
          issueId: a.issue ? (this.issueByIdentifier.get(a.issue) ?? null) : null,
          kind: a.kind,
          actorId: this.known(a.actorId),
          keyId: this.known(a.keyId),
          runtime: a.runtime,
          facts: a.facts ? (this.remap(a.facts) as Record<string, unknown>) : null,
          detailEnc: a.detail ? cipher.encrypt(JSON.stringify(this.remap(a.detail))) : null,
          createdAt: new Date(a.createdAt),
        });
        this.counts.activity++;
        if (this.buffer.activity.length >= FLUSH_ROWS) await this.flush();
        return;
      }
    }
  }

  private async person(p: ExportPerson): Promise<void> {
    if (this.orgId) throw invalidInput("people come first in an export", "Export the org again; the file is out of order.");
    const { ownerUserId, ownerEmail } = this.newOrg;
    // From the Dash, an uploader's file may name anyone: nobody else's account is made, matched
    // or joined to the org. They become placeholders their owner claims ("That's me"), as a
    // Linear import's people do; the operator's command (trusted) matches on email.
    const placeholder = ownerUserId !== undefined && p.email.toLowerCase() !== ownerEmail?.toLowerCase();
    const userId = ownerUserId === undefined ? await ensureUser(this.tx, p.email, p.name) : placeholder ? await placeholderUser(this.tx, p.name) : ownerUserId;
    this.ids.set(p.id, userId);
    this.people.push({ person: p, userId, placeholder });
    this.counts.people++;
  }

  /** The new org, made once the people are known (its first owner creates it). */
  private async org(): Promise<string> {
    if (this.orgId) return this.orgId;
    const owner = this.people.find((p) => p.person.member?.role === "owner");
    if (!owner) throw invalidInput("the export names no owner", "An org export always has one; export the org again.");
    const { ownerUserId, ownerEmail: _uploader, ...newOrg } = this.newOrg;
    this.orgId = await createOrg(this.services, this.tx, { ...newOrg, ownerUserId: ownerUserId ?? owner.userId });
    this.cipher = await this.services.keyring.forOrg(this.tx, this.orgId);
    for (const { person, userId, placeholder } of this.people) {
      if (placeholder) {
        await this.tx.insert(importGhosts).values({ id: this.newId(), orgId: this.orgId, source: "export", sourceUserId: person.id, userId, emailEnc: this.cipher.encrypt(person.email), emailHash: emailHash(person.email) });
        continue;
      }
      if (!person.member) continue;
      const { role, status, since } = person.member;
      await this.tx
        .insert(members)
        .values({ id: this.newId(), orgId: this.orgId, userId, role, status, createdAt: new Date(since) })
        .onConflictDoUpdate({ target: [members.orgId, members.userId], set: { role, status, createdAt: new Date(since) } });
    }
    if (ownerUserId) {
      await this.tx
        .update(members)
        .set({ role: "owner", status: "active" })
        .where(and(eq(members.orgId, this.orgId), eq(members.userId, ownerUserId)));
    }
    return this.orgId;
  }

  private issue(orgId: string, cipher: OrgCipher, i: ExportIssue): void {
    const projectId = this.projectByPrefix.get(i.project);
    if (!projectId) throw invalidInput(`issue ${i.identifier} is in project ${i.project}, which the export does not list`, "Export the org again; the file is incomplete.");
    const id = this.idFor(i.id);
    this.issueByIdentifier.set(i.identifier, id);
    const dueAt = i.dueAt ? new Date(i.dueAt) : null;
    const dueSetAt = i.dueSetAt ? new Date(i.dueSetAt) : null;
    const terminal = isTerminal(i.status);
    // The review clock (decision 073): the export's, or (an export from before it) from the import.
    const exported = i.reviewSince ? new Date(i.reviewSince) : null;
    const triage = i.triage ?? null;
    const reviewSince = reviewSinceAfter({ status: null, triage: null, reviewSince: exported }, { status: i.status, triage }, this.now, exported ?? this.now);
    const ranking = rankingColumns(i.priority, dueAt, dueSetAt, terminal, this.now, reviewClockOf({ status: i.status, reviewSince }));
    this.buffer.issues.push({
      id,
      orgId,
      projectId,
      number: i.number,
      identifier: i.identifier,
      titleEnc: cipher.encrypt(i.title)!,
      bodyEnc: cipher.encrypt(i.body),
      noDependencyEnc: cipher.encrypt(i.noDependency),
      cancelReasonEnc: cipher.encrypt(i.cancelReason),
      work: i.work,
      changeType: i.changeType ?? null,
      status: i.status,
      priority: i.priority,
      triage: i.triage ?? null,
      assigneeId: this.known(i.assigneeId),
      authorId: this.known(i.authorId),
      submitterId: this.known(i.submitterId),
      dueAt,
      dueSetAt,
      ...ranking,
      effectiveLevel: ranking.ownLevel,
      effectiveDueAt: terminal ? null : dueAt,
      fence: i.fence,
      firstClaimedAt: i.firstClaimedAt ? new Date(i.firstClaimedAt) : null,
      reviewSince,
      branch: i.branch,
      verification: i.verification ?? null,
      verificationAt: i.verification ? new Date(i.updatedAt) : null,
      evidenceCommit: i.evidence?.commit ?? null,
      evidenceBranch: i.evidence?.branch ?? null,
      evidencePr: i.evidence?.pr ?? null,
      createdAt: new Date(i.createdAt),
      updatedAt: new Date(i.updatedAt),
    });
    this.counts.issues++;
    if (i.parent) this.parents.push({ id, parent: i.parent });
    // The link keeps the estimate; an empty hash makes a later Linear re-import compare it afresh.
    if (i.linear) this.buffer.linearLinks.push({ orgId, linearId: i.linear.id, kind: "issue", retascId: id, hash: "", estimate: i.linear.estimate });
    for (const r of i.relations) this.edges.push({ sourceId: id, target: r.target, type: r.type, createdAt: new Date(r.createdAt) });
    for (const name of i.labels) {
      const labelId = this.labelByName.get(name);
      if (labelId) this.buffer.issueLabels.push({ issueId: id, labelId });
    }
    for (const c of i.comments) {
      this.buffer.comments.push({
        id: this.idFor(c.id),
        orgId,
        issueId: id,
        parentId: c.parentId ? this.idFor(c.parentId) : null,
        authorId: this.known(c.authorId),
        keyId: this.known(c.keyId),
        runtime: c.runtime,
        bodyEnc: cipher.encrypt(c.body)!,
        retractedAt: c.retractedAt ? new Date(c.retractedAt) : null,
        retractNoteEnc: cipher.encrypt(c.retractNote),
        createdAt: new Date(c.createdAt),
      });
      this.counts.comments++;
    }
    for (const a of i.attachments) {
      const attachmentId = this.newId();
      this.buffer.attachments.push({
        id: attachmentId,
        orgId,
        issueId: id,
        urlEnc: cipher.encrypt(a.file ? downloadPath(attachmentId) : (a.url ?? ""))!,
        titleEnc: cipher.encrypt(a.title),
        authorId: this.known(a.authorId),
        keyId: this.known(a.keyId),
        obsoletedAt: a.obsoletedAt ? new Date(a.obsoletedAt) : null,
        obsoleteReasonEnc: cipher.encrypt(a.obsoleteReason),
        createdAt: new Date(a.createdAt),
      });
      if (a.file) {
        // Decoded and typed as save_attachment_file does: strict base64, at most 10 MiB, the type sniffed from the bytes.
        const bytes = decodeFile(a.file.contentBase64);
        this.buffer.attachmentFiles.push({ attachmentId, orgId, contentType: sniffContentType(bytes), sizeBytes: bytes.length, contentEnc: cipher.encryptBytes(bytes) });
      }
    }
    for (const c of i.checkpoints) {
      this.buffer.checkpoints.push({
        id: this.newId(),
        orgId,
        issueId: id,
        userId: this.known(c.userId),
        keyId: this.known(c.keyId),
        runtime: c.runtime,
        doneEnc: cipher.encrypt(c.done),
        nextEnc: cipher.encrypt(c.next),
        gotchasEnc: cipher.encrypt(c.gotchas),
        noteEnc: cipher.encrypt(c.note),
        branch: c.branch,
        createdAt: new Date(c.createdAt),
      });
    }
  }

  private buffered(): number {
    const b = this.buffer;
    return b.linearLinks.length + b.issueLabels.length + b.comments.length + b.attachments.length + 50 * b.attachmentFiles.length + b.checkpoints.length;
  }

  /** Writes the buffered rows, parents before children, in batches the parameter limit allows. */
  private async flush(): Promise<void> {
    const { tx, buffer } = this;
    // Batches of about a thousand values: building an insert is synchronous work (drizzle's), and a
    // batch of 100 issues held the event loop for tens of milliseconds (decision 037).
    const write = async <T extends object>(rows: T[], insert: (batch: T[]) => Promise<unknown>, most = Infinity) => {
      const batch = rows.length ? Math.max(1, Math.min(most, Math.floor(1000 / Object.keys(rows[0]!).length))) : 1;
      for (let at = 0; at < rows.length; at += batch) await insert(rows.slice(at, at + batch));
      rows.length = 0;
    };
    await write(buffer.issues, (b) => tx.insert(issues).values(b));
    await write(buffer.linearLinks, (b) => tx.insert(linearLinks).values(b));
    await write(buffer.issueLabels, (b) => tx.insert(issueLabels).values(b));
    await write(buffer.comments, (b) => tx.insert(comments).values(b));
    await write(buffer.attachments, (b) => tx.insert(attachments).values(b));
    // A file's row is its content (up to 10 MiB): a few at a time.
    await write(buffer.attachmentFiles, (b) => tx.insert(attachmentFiles).values(b), 10);
    await write(buffer.checkpoints, (b) => tx.insert(checkpoints).values(b));
    await write(buffer.activity, (b) => tx.insert(activity).values(b));
  }

  /** The rest once every record is in: parents, edges, blocker counts and ranking. */
  async finish(): Promise<string> {
    const orgId = await this.org();
    await this.flush();
    const { tx } = this;
    const values = <T>(rows: T[], row: (r: T) => SQL) => sql.join(rows.map(row), sql`, `);
    const parents = this.parents.flatMap((p) => {
      const parentId = this.issueByIdentifier.get(p.parent);
      return parentId ? [{ id: p.id, parentId }] : [];
    });
    for (let at = 0; at < parents.length; at += 1000) {
      const chunk = parents.slice(at, at + 1000);
      await tx.execute(sql`update issues set parent_id = v.parent_id from (values ${values(chunk, (p) => sql`(${p.id}, ${p.parentId})`)}) as v(id, parent_id) where issues.id = v.id`);
    }
    const edges = this.edges.flatMap((e) => {
      const targetId = this.issueByIdentifier.get(e.target);
      return targetId ? [{ id: this.newId(), orgId, sourceId: e.sourceId, targetId, type: e.type, createdAt: e.createdAt }] : [];
    });
    for (let at = 0; at < edges.length; at += 500) await tx.insert(relations).values(edges.slice(at, at + 500)).onConflictDoNothing();
    await tx.execute(sql`update issues set open_blocker_count = b.n
      from (select r.target_id, count(*)::int as n from relations r join issues s on s.id = r.source_id
            where r.org_id = ${orgId} and r.type = 'blocks' and ${gatesDependents(sql`s.status`, sql`s.verification`)} group by r.target_id) b
      where issues.id = b.target_id`);
    const blocked = [...new Set(edges.filter((e) => e.type === "blocks").map((e) => e.targetId))];
    for (let at = 0; at < blocked.length; at += RERANK_CHUNK) await rerank(tx, blocked.slice(at, at + RERANK_CHUNK));
    return orgId;
  }
}
