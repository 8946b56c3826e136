import { stringify } from "csv-stringify/sync";
import { z } from "zod";
import type { Db } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { actorOf } from "../orgs/access.ts";
import { requireExporter } from "../orgs/settings.ts";
import { DIFFERS_ON_IMPORT, EXPORT_FORMAT, EXPORT_VERSION, type ExportHeader, type Section } from "./format.ts";
import { blockersOf, fullIssues, issueRowPages } from "./read-issues.ts";
import { activityPages, readAgents, readLabels, readOrg, readPeople, readProjects } from "./read-org.ts";

export const exportFormats = ["json", "csv"] as const;
export const csvTables = ["issues", "comments"] as const;

export const exportInput = z.object({
  format: z.enum(exportFormats, { error: "format is json or csv" }).default("json"),
  /** Which table a CSV export holds; JSON holds everything. */
  table: z.enum(csvTables, { error: "table is issues or comments" }).default("issues"),
});

export interface OrgExport {
  filename: string;
  contentType: string;
  /** The document in chunks, read from the database page by page as they are consumed. */
  chunks: AsyncIterable<string>;
}

/**
 * The whole org, decrypted, for its owners (and operators), and its admins where an owner lets them
 * (requireExporter, the one check every door's export passes): JSON (everything, the
 * format docs/export-format.md describes, which imports back) or CSV (issues, or comments).
 * The access check runs now; the document is read as the caller consumes `chunks`.
 */
export async function exportOrg(ctx: Ctx, raw: z.input<typeof exportInput> = {}): Promise<OrgExport> {
  const input = exportInput.parse(raw);
  await requireExporter(ctx, await actorOf(ctx));
  const orgId = ctx.principal.orgId;
  const org = await readOrg(ctx.db, orgId);
  const cipher = await ctx.keyring.forOrg(ctx.db, orgId);
  const day = ctx.clock.now().toISOString().slice(0, 10);
  const stem = `retasc-${slug(org.name)}-${day}`;
  if (input.format === "json") {
    const header: ExportHeader = {
      format: EXPORT_FORMAT,
      version: EXPORT_VERSION,
      exportedAt: ctx.clock.now().toISOString(),
      differsOnImport: DIFFERS_ON_IMPORT,
      org,
    };
    return { filename: `${stem}.json`, contentType: "application/json; charset=utf-8", chunks: jsonChunks(ctx.db, cipher, header) };
  }
  const chunks = input.table === "issues" ? issuesCsv(ctx.db, cipher, orgId) : commentsCsv(ctx.db, cipher, orgId);
  return { filename: `${stem}-${input.table}.csv`, contentType: "text/csv; charset=utf-8", chunks };
}

const slug = (name: string) => name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "").slice(0, 40) || "org";

/** Records one per line inside each section's array (docs/export-format.md, "Layout"). */
async function* jsonChunks(db: Db, cipher: OrgCipher, header: ExportHeader): AsyncGenerator<string> {
  const orgId = header.org.id;
  yield JSON.stringify(header).slice(0, -1) + ",\n";
  const projects = await readProjects(db, orgId);
  const sections: Record<Section, () => AsyncIterable<unknown[]>> = {
    people: async function* () {
      yield await readPeople(db, orgId);
    },
    projects: async function* () {
      yield projects.map(({ id: _id, ...project }) => project);
    },
    labels: async function* () {
      yield await readLabels(db, orgId);
    },
    agents: async function* () {
      yield await readAgents(db, orgId);
    },
    issues: async function* () {
      for (const project of projects) {
        for await (const page of issueRowPages(db, project.id)) yield await fullIssues(db, cipher, page, project.prefix);
      }
    },
    activity: () => activityPages(db, cipher, orgId),
  };
  const names = Object.keys(sections) as Section[];
  for (const [index, name] of names.entries()) {
    yield `${JSON.stringify(name)}:[`;
    let first = true;
    for await (const page of sections[name]()) {
      if (page.length === 0) continue;
      yield (first ? "\n" : ",\n") + page.map((record) => JSON.stringify(record)).join(",\n");
      first = false;
    }
    yield index === names.length - 1 ? "\n]}\n" : "\n],\n";
  }
}

/** Cells that a spreadsheet would run as a formula (=, +, -, @, tab, CR) are prefixed with '. */
const csv = (rows: unknown[][], header: string[] | null) =>
  stringify(header ? [header, ...rows] : rows, { escape_formulas: true, cast: { boolean: (value) => String(value) } });

async function* issuesCsv(db: Db, cipher: OrgCipher, orgId: string): AsyncGenerator<string> {
  const emails = new Map((await readPeople(db, orgId)).map((p) => [p.id, p.email]));
  const email = (id: string | null) => (id ? (emails.get(id) ?? id) : "");
  yield csv([], ["identifier", "project", "title", "status", "priority", "work", "assignee", "author", "parent", "labels", "blocked_by", "due_at", "created_at", "updated_at", "cancel_reason", "body", "estimate", "change_type"]);
  for (const project of await readProjects(db, orgId)) {
    for await (const page of issueRowPages(db, project.id)) {
      const [full, blockers] = await Promise.all([fullIssues(db, cipher, page, project.prefix, { attachments: false }), blockersOf(db, page.map((i) => i.id))]);
      yield csv(
        full.map((i) => [
          i.identifier,
          i.project,
          i.title,
          i.status,
          i.priority,
          i.work,
          email(i.assigneeId),
          email(i.authorId),
          i.parent ?? "",
          i.labels.join("; "),
          (blockers.get(i.id) ?? []).join("; "),
          i.dueAt ?? "",
          i.createdAt,
          i.updatedAt,
          i.cancelReason ?? "",
          i.body ?? "",
          i.linear?.estimate ?? "",
          i.changeType ?? "",
        ]),
        null,
      );
    }
  }
}

async function* commentsCsv(db: Db, cipher: OrgCipher, orgId: string): AsyncGenerator<string> {
  const emails = new Map((await readPeople(db, orgId)).map((p) => [p.id, p.email]));
  yield csv([], ["issue", "comment_id", "parent_id", "author", "runtime", "created_at", "retracted_at", "retract_note", "body"]);
  for (const project of await readProjects(db, orgId)) {
    for await (const page of issueRowPages(db, project.id)) {
      const full = await fullIssues(db, cipher, page, project.prefix, { attachments: false });
      const rows = full.flatMap((i) =>
        i.comments.map((c) => [
          i.identifier,
          c.id,
          c.parentId ?? "",
          c.authorId ? (emails.get(c.authorId) ?? c.authorId) : "",
          c.runtime ?? "",
          c.createdAt,
          c.retractedAt ?? "",
          c.retractNote ?? "",
          c.body,
        ]),
      );
      if (rows.length > 0) yield csv(rows, null);
    }
  }
}
