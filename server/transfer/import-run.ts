import { and, eq, sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
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
} from "../../db/schema/index.ts";
import { gatesDependents } from "../../db/schema/dispatch.ts";
import type { Services } from "../context.ts";
import { randomToken, sha256, type OrgCipher } from "../crypto/index.ts";
import { invalidInput } from "../errors.ts";
import { rerank } from "../issues/ranking.ts";
import { createOrg, ensureUser } from "../orgs/index.ts";
import { checkRecord } from "./checks.ts";
import type { ExportPerson } from "./format.ts";
import { bufferIssue, type ImportBuffer, type IssueTarget } from "./import-issue.ts";
import type { ExportEntry } from "./read-export.ts";
import { emailHash, placeholderUser } from "./pipeline/ghosts.ts";

const FLUSH_ISSUES = 200;
const FLUSH_ROWS = 1000;
const RERANK_CHUNK = 2000;

/**
 * One import of an export (import-org.ts runs it in its transaction): it takes the records in the
 * export's order (people, projects, labels, agents, issues, activity), buffers rows and flushes
 * them in batches, then links parents and relations and ranks what they block.
 */
export class ImportRun {
  private orgId: string | null = null;
  private cipher: OrgCipher | null = null;
  private readonly people: { person: ExportPerson; userId: string; placeholder: boolean }[] = [];
  /** Old id → new id, for every kind of id the export names (people, keys, issues, comments). */
  private readonly ids = new Map<string, string>();
  readonly issueByIdentifier = new Map<string, string>();
  readonly projectByPrefix = new Map<string, string>();
  /** Every prefix a project of the export has or had (decision 089). */
  private readonly prefixesTaken = new Set<string>();
  readonly labelByName = new Map<string, string>();
  readonly parents: IssueTarget["parents"] = [];
  readonly edges: IssueTarget["edges"] = [];
  readonly buffer: ImportBuffer = { issues: [], linearLinks: [], issueLabels: [], comments: [], attachments: [], attachmentFiles: [], checkpoints: [], activity: [] };
  readonly counts = { people: 0, projects: 0, labels: 0, agents: 0, issues: 0, comments: 0, activity: 0 };

  constructor(
    private readonly services: Services,
    private readonly tx: Db,
    /**
     * ownerUserId and ownerEmail: who imports from the Dash, owner whatever the export says of
     * them. Anyone else the export names comes in as a placeholder (decision 031).
     */
    private readonly newOrg: { name: string; timeZone: string; ownerUserId?: string; ownerEmail?: string },
    readonly newId: () => string,
    readonly now: Date,
  ) {}

  /** The new id for an old one, made on first sight (a reply may come before its thread's root). */
  idFor(old: string): string {
    let id = this.ids.get(old);
    if (!id) this.ids.set(old, (id = this.newId()));
    return id;
  }
  known = (old: string | null | undefined): string | null => (old ? (this.ids.get(old) ?? null) : null);

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
        bufferIssue(this, orgId, cipher, entry.record);
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
