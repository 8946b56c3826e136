import { parse } from "csv-parse/sync";
import { z } from "zod";
import { issueStatuses, type IssueStatus } from "../../../db/schema/index.ts";
import { invalidInput } from "../../errors.ts";
import { BODY_MAX_CHARS } from "../../issues/schemas.ts";
import { sha256 } from "../../crypto/index.ts";
import type { SourceIssue, SourcePerson } from "../pipeline/stream.ts";

/**
 * CSV as a source: any export (Trello, GitHub Projects, a spreadsheet, Retasc's own issues CSV)
 * read by csv-parse, its columns mapped to ours by a mapping the person picks from a preview
 * (`previewCsv` guesses one from the header). Rows are issues; a mapped `id` column makes a
 * second run reconcile on it (else the row's position does), `parent` and `blockedBy` name other
 * rows by that id. Cells are outsiders' text: bodies are Markdown rendered safely like any body.
 */
export const CSV_MAX_BYTES = 20 * 1024 * 1024;
const PREVIEW_ROWS = 5;

export const csvFields = ["id", "title", "body", "status", "priority", "dueDate", "labels", "assignee", "author", "createdAt", "updatedAt", "parent", "blockedBy"] as const;
export type CsvField = (typeof csvFields)[number];

const column = z.string().trim().min(1).max(200);
export const csvMappingInput = z.object({
  columns: z.object(Object.fromEntries(csvFields.map((f) => [f, column.optional()])) as Record<CsvField, z.ZodOptional<typeof column>>).refine((c) => Boolean(c.title), { message: "columns.title is required: the column that holds each issue's title" }),
  statuses: z.record(z.string().max(200), z.enum(issueStatuses)).optional(),
  priorities: z.record(z.string().max(200), z.number().int().min(0).max(4)).optional(),
});
export type CsvMapping = z.infer<typeof csvMappingInput>;

/** Header names each field is guessed from (lowercased, spaces and punctuation dropped). */
const guesses: Record<CsvField, string[]> = {
  id: ["id", "identifier", "key", "issuekey", "issueid", "number", "cardid"],
  title: ["title", "summary", "name", "cardname", "subject", "task"],
  body: ["body", "description", "details", "carddescription", "notes", "content"],
  status: ["status", "state", "list", "listname", "column", "stage"],
  priority: ["priority", "severity", "importance"],
  dueDate: ["duedate", "due", "dueat", "deadline", "dueon"],
  labels: ["labels", "label", "tags", "tag", "components"],
  assignee: ["assignee", "assignees", "owner", "assignedto", "members"],
  author: ["author", "reporter", "creator", "createdby"],
  createdAt: ["createdat", "created", "createddate", "datecreated"],
  updatedAt: ["updatedat", "updated", "lastactivity", "lastmodified", "modified"],
  parent: ["parent", "parentid", "epic", "epiclink", "parentissue"],
  blockedBy: ["blockedby", "blockers", "dependson"],
};
const squash = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, "");

function parseRows(text: string): { columns: string[]; rows: Record<string, string>[] } {
  if (Buffer.byteLength(text) > CSV_MAX_BYTES) throw invalidInput(`the CSV is larger than ${CSV_MAX_BYTES / 1024 / 1024} MB`, "Split the file and import it in parts; each part reconciles with the last.");
  let rows: Record<string, string>[];
  try {
    rows = parse(text, { columns: (header: string[]) => header.map((h) => h.trim()), bom: true, skip_empty_lines: true, relax_column_count: true, relax_quotes: true, trim: false, max_record_size: BODY_MAX_CHARS * 2 });
  } catch (error) {
    throw invalidInput(`the CSV could not be read: ${(error as Error).message.slice(0, 200)}`, "Export it again as comma-separated values with a header row.");
  }
  const columns = text.length > 0 && rows.length > 0 ? Object.keys(rows[0]!) : [];
  return { columns, rows };
}

/** The header, the first rows, and the mapping guessed from the header: what the person adjusts before the run. */
export function previewCsv(text: string) {
  const { columns, rows } = parseRows(text);
  if (columns.length === 0) throw invalidInput("the CSV has no header row or no rows", "The first line names the columns; each line after it is an issue.");
  const picked: Partial<Record<CsvField, string>> = {};
  for (const field of csvFields) {
    const match = columns.find((c) => guesses[field].includes(squash(c)));
    if (match && !Object.values(picked).includes(match)) picked[field] = match;
  }
  const mapping: CsvMapping = { columns: picked as CsvMapping["columns"] };
  const values = (field: CsvField) => [...new Set(rows.map((r) => (picked[field] ? (r[picked[field]!] ?? "").trim() : "")).filter(Boolean))].slice(0, 50);
  return {
    columns,
    rows: rows.slice(0, PREVIEW_ROWS),
    rowCount: rows.length,
    mapping,
    statuses: Object.fromEntries(values("status").map((v) => [v, csvStatus(v, mapping)])),
    priorities: Object.fromEntries(values("priority").map((v) => [v, csvPriority(v, mapping)])),
  };
}

const statusWords: [IssueStatus, string[]][] = [
  ["doing", ["inprogress", "doing", "started", "active", "inreview", "review", "wip", "ongoing"]],
  ["done", ["done", "closed", "complete", "completed", "resolved", "finished", "shipped", "merged"]],
  ["canceled", ["canceled", "cancelled", "wontdo", "wontfix", "declined", "duplicate", "abandoned", "rejected"]],
];
export function csvStatus(value: string, mapping: Pick<CsvMapping, "statuses"> = {}): IssueStatus {
  const own = mapping.statuses?.[value.trim()];
  if (own) return own;
  const word = squash(value);
  return statusWords.find(([, words]) => words.includes(word))?.[0] ?? "todo";
}

const priorityWords: [number, string[]][] = [
  [1, ["urgent", "highest", "critical", "blocker", "p0", "1"]],
  [2, ["high", "p1", "2", "major"]],
  [3, ["medium", "normal", "p2", "3"]],
  [4, ["low", "lowest", "minor", "trivial", "p3", "p4", "4"]],
];
export function csvPriority(value: string, mapping: Pick<CsvMapping, "priorities"> = {}): number {
  const own = mapping.priorities?.[value.trim()];
  if (own !== undefined) return own;
  const word = squash(value);
  return priorityWords.find(([, words]) => words.includes(word))?.[0] ?? 0;
}

/** A cell as an ISO time, or null when it is not a date. */
function time(cell: string | undefined): string | null {
  if (!cell?.trim()) return null;
  const t = new Date(cell.trim());
  return Number.isNaN(t.getTime()) ? null : t.toISOString();
}
const list = (cell: string | undefined) => (cell ?? "").split(/[,;\n]/).map((v) => v.trim()).filter(Boolean);

/**
 * The file's rows as the pipeline's issues. `name` keys the source (the same file imported again
 * reconciles); `fallbackTime` stands for a row without a created time.
 */
export function csvIssues(text: string, mapping: CsvMapping, name: string, fallbackTime: string): SourceIssue[] {
  const { columns, rows } = parseRows(text);
  const c = mapping.columns;
  const missing = Object.entries(c).filter(([, col]) => col && !columns.includes(col));
  if (missing.length > 0) throw invalidInput(`the CSV has no column ${missing.map(([, col]) => JSON.stringify(col)).join(", ")}`, `Its columns are ${columns.slice(0, 30).map((x) => JSON.stringify(x)).join(", ")}.`);
  const ns = `csv:${sha256(name).slice(0, 16)}`;
  const cell = (row: Record<string, string>, field: CsvField) => (c[field] ? (row[c[field]!] ?? "") : "");
  const rowId = (row: Record<string, string>, n: number) => cell(row, "id").trim() || `#${n + 1}`;
  const issueId = (key: string) => `${ns}:row:${key}`;
  const known = new Set(rows.map((r, n) => rowId(r, n)));
  const person = (value: string): SourcePerson | null => {
    const v = value.trim();
    if (!v) return null;
    const email = /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(v) ? v : null;
    return { id: `${ns}:person:${v.toLowerCase()}`, name: (email ? v.split("@")[0]! : v).slice(0, 100), email };
  };
  const issues = rows.map((row, n): SourceIssue => {
    const key = rowId(row, n);
    const status = csvStatus(cell(row, "status"), mapping);
    const createdAt = time(cell(row, "createdAt")) ?? fallbackTime;
    const updatedAt = time(cell(row, "updatedAt")) ?? createdAt;
    const due = time(cell(row, "dueDate"));
    const parent = cell(row, "parent").trim();
    return {
      id: issueId(key),
      number: null,
      key,
      title: (cell(row, "title").trim() || `Row ${n + 1}`).slice(0, 500),
      body: cell(row, "body").slice(0, BODY_MAX_CHARS) || null,
      status,
      priority: csvPriority(cell(row, "priority"), mapping),
      sourceStatus: cell(row, "status").trim(),
      sourcePriority: cell(row, "priority").trim(),
      estimate: null,
      dueDate: due ? due.slice(0, 10) : null,
      createdAt,
      updatedAt,
      startedAt: null,
      completedAt: status === "done" ? updatedAt : null,
      canceledAt: status === "canceled" ? updatedAt : null,
      parentId: parent && parent !== key && known.has(parent) ? issueId(parent) : null,
      creator: person(cell(row, "author")),
      assignee: person(list(cell(row, "assignee"))[0] ?? ""),
      labels: list(cell(row, "labels")).map((l) => ({ id: `${ns}:label:${l.toLowerCase()}`, name: l.slice(0, 100), color: "#6b778c" })),
      comments: [],
      attachments: [],
      relations: [],
    };
  });
  // "Blocked by" names the blockers; the pipeline's edge is carried by the blocker.
  const byKey = new Map(issues.map((i) => [i.key, i]));
  for (const [n, row] of rows.entries()) {
    const blocked = issues[n]!;
    for (const blocker of list(cell(row, "blockedBy"))) {
      const from = byKey.get(blocker);
      if (from && from !== blocked) from.relations.push({ id: `${ns}:blocks:${blocker}>${blocked.key}`, type: "blocks", targetId: blocked.id, createdAt: blocked.createdAt });
    }
  }
  return issues;
}

export const CSV_ROWS_PER_PAGE = 200;
