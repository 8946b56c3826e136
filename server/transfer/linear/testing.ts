import crypto from "node:crypto";
import { sql } from "drizzle-orm";
import { query } from "../../../db/client.ts";
import type { Services } from "../../context.ts";
import type { FakeWorkspace } from "../../../test/fakes/linear-workspace.ts";
import { statusOf } from "./normalize.ts";

/**
 * Tests' view of an imported project, decrypted and keyed by identifier, with no Retasc ids in
 * it: two imports of the same workspace (one interrupted, one not) give equal snapshots.
 */
export interface ImportedIssue {
  title: string;
  body: string | null;
  status: string;
  priority: number;
  work: boolean;
  dueAt: string | null;
  createdAt: string;
  updatedAt: string;
  parent: string | null;
  author: string | null;
  assignee: string | null;
  estimate: number | null;
  labels: string[];
  comments: { body: string; createdAt: string; retracted: boolean; parent: string | null; author: string | null }[];
  /** A link's url, or a file as `file:sha256:<its content's digest>`. */
  attachments: { url: string; title: string | null; createdAt: string }[];
  relations: string[];
  history: string[];
}

export const sha256Hex = (bytes: Buffer) => crypto.createHash("sha256").update(bytes).digest("hex");

export async function snapshotProject(services: Services, orgId: string, prefix: string): Promise<Map<string, ImportedIssue>> {
  const cipher = await services.keyring.forOrg(services.db, orgId);
  const rows = await query<Record<string, any>>(
    services.db,
    sql`select i.id, i.identifier, i.title_enc, i.body_enc, i.status, i.priority, i.work, i.due_at, i.created_at, i.updated_at,
          p.identifier as parent, au.name as author, asg.name as assignee, l.estimate
        from issues i join projects pr on pr.id = i.project_id
        left join issues p on p.id = i.parent_id left join "user" au on au.id = i.author_id left join "user" asg on asg.id = i.assignee_id
        left join linear_links l on l.org_id = i.org_id and l.retasc_id = i.id and l.kind = 'issue'
        where i.org_id = ${orgId} and pr.prefix = ${prefix}`,
  );
  const iso = (v: unknown) => (v ? new Date(v as string).toISOString() : null);
  const out = new Map<string, ImportedIssue>();
  const byId = new Map<string, ImportedIssue>();
  for (const r of rows) {
    const issue: ImportedIssue = {
      title: cipher.decrypt(r.title_enc)!,
      body: cipher.decrypt(r.body_enc),
      status: r.status,
      priority: Number(r.priority),
      work: Boolean(r.work),
      dueAt: iso(r.due_at),
      createdAt: iso(r.created_at)!,
      updatedAt: iso(r.updated_at)!,
      parent: r.parent,
      author: r.author,
      assignee: r.assignee,
      estimate: r.estimate === null ? null : Number(r.estimate),
      labels: [],
      comments: [],
      attachments: [],
      relations: [],
      history: [],
    };
    out.set(r.identifier, issue);
    byId.set(r.id, issue);
  }
  const labels = await query<{ issue_id: string; name: string; color: string }>(services.db, sql`select il.issue_id, l.name, l.color from issue_labels il join labels l on l.id = il.label_id where l.org_id = ${orgId}`);
  for (const l of labels) byId.get(l.issue_id)?.labels.push(`${l.name}:${l.color}`);
  const comments = await query<Record<string, any>>(
    services.db,
    sql`select c.issue_id, c.body_enc, c.created_at, c.retracted_at, p.body_enc as parent_enc, u.name as author
        from comments c left join comments p on p.id = c.parent_id left join "user" u on u.id = c.author_id where c.org_id = ${orgId} order by c.created_at, c.id`,
  );
  for (const c of comments) {
    byId.get(c.issue_id)?.comments.push({ body: cipher.decrypt(c.body_enc)!, createdAt: iso(c.created_at)!, retracted: c.retracted_at !== null, parent: cipher.decrypt(c.parent_enc), author: c.author });
  }
  const attachments = await query<Record<string, any>>(
    services.db,
    sql`select a.issue_id, a.url_enc, a.title_enc, a.created_at, f.content_enc from attachments a left join attachment_files f on f.attachment_id = a.id where a.org_id = ${orgId} order by a.created_at, a.id`,
  );
  for (const a of attachments) {
    // A file by its content (its url is a Dash download naming a Retasc id).
    const url = a.content_enc ? `file:sha256:${sha256Hex(cipher.decryptBytes(Buffer.from(a.content_enc)))}` : cipher.decrypt(a.url_enc)!;
    byId.get(a.issue_id)?.attachments.push({ url, title: cipher.decrypt(a.title_enc), createdAt: iso(a.created_at)! });
  }
  const relations = await query<{ source_id: string; type: string; target: string }>(services.db, sql`select r.source_id, r.type, t.identifier as target from relations r join issues t on t.id = r.target_id where r.org_id = ${orgId}`);
  for (const r of relations) byId.get(r.source_id)?.relations.push(`${r.type}:${r.target}`);
  const history = await query<{ issue_id: string; kind: string; created_at: string }>(services.db, sql`select issue_id, kind, created_at from activity where org_id = ${orgId} and issue_id is not null order by created_at, id`);
  for (const h of history) byId.get(h.issue_id)?.history.push(`${h.kind}@${iso(h.created_at)}`);
  for (const i of out.values()) {
    i.labels.sort();
    i.relations.sort();
  }
  return out;
}

/** What the snapshot of an import of `w` must hold for each issue, derived from the fake's data alone. */
export function expectedFrom(w: FakeWorkspace, endOfDay: (date: string) => string): Map<string, ImportedIssue> {
  const ident = (id: string | null) => (id ? `${w.team.key}-${w.issues.find((i) => i.id === id)!.number}` : null);
  const name = (id: string | null) => (id ? w.users.find((u) => u.id === id)!.name : null);
  const parents = new Set(w.issues.map((i) => i.parentId));
  const out = new Map<string, ImportedIssue>();
  for (const i of w.issues) {
    const status = statusOf(w.states.find((s) => s.id === i.stateId)!.type);
    const byComment = new Map(i.comments.map((c) => [c.id, c]));
    out.set(`${w.team.key}-${i.number}`, {
      title: i.title,
      body: i.description,
      status,
      priority: i.priority,
      work: !parents.has(i.id),
      dueAt: i.dueDate ? endOfDay(i.dueDate) : null,
      createdAt: i.createdAt,
      updatedAt: i.updatedAt,
      parent: ident(i.parentId),
      author: name(i.creatorId),
      assignee: name(i.assigneeId),
      estimate: i.estimate,
      labels: i.labelIds.map((id) => w.labels.find((l) => l.id === id)!).map((l) => `${l.name}:${l.color}`).sort(),
      comments: i.comments.map((c) => ({ body: c.body, createdAt: c.createdAt, retracted: c.archivedAt !== null, parent: c.parentId ? byComment.get(c.parentId)!.body : null, author: name(c.userId) })),
      attachments: i.attachments.map((a) => ({ url: a.url, title: a.title, createdAt: a.createdAt })),
      relations: w.relations.filter((r) => r.issueId === i.id).map((r) => `${r.type}:${ident(r.relatedIssueId)}`).sort(),
      history: [
        ["created", i.createdAt],
        ["started", i.startedAt],
        ["done", i.completedAt],
        ["canceled", i.canceledAt],
      ]
        .filter(([, at]) => at)
        .map(([kind, at]) => `${kind}@${at}`),
    });
  }
  return out;
}
