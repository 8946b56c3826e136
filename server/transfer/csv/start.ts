import { z } from "zod";
import type { Ctx } from "../../context.ts";
import { actorOf, requireRole } from "../../orgs/access.ts";
import { prefixSchema } from "../../orgs/index.ts";
import { dryRun } from "../pipeline/dry-run.ts";
import { beginImport, oneProject, projectTarget } from "../pipeline/start.ts";
import { pagedReader } from "../pipeline/stream.ts";
import { CSV_MAX_BYTES, CSV_ROWS_PER_PAGE, csvIssues, csvMappingInput, previewCsv } from "./read.ts";

const csvText = z.string({ error: "csv is required: the file's text" }).min(1, "csv is required: the file's text").max(CSV_MAX_BYTES, `csv: at most ${CSV_MAX_BYTES / 1024 / 1024} MB`);
const name = z.string({ error: "name is required" }).trim().min(1, "name is required").max(200).describe("what the file is (its file name): the same name imported again reconciles");

export const previewCsvInput = z.object({ csv: csvText });
export const dryRunCsvInput = z.object({ csv: csvText, name, mapping: csvMappingInput });
export const startCsvInput = dryRunCsvInput
  .extend({ ...projectTarget, newProject: z.object({ name: z.string().trim().min(1, "newProject.name is required").max(100), prefix: prefixSchema }).optional() })
  .refine(...oneProject);

/** The file's header, first rows and a guessed mapping (owners and admins): what the person picks the mapping from. */
export async function previewCsvImport(ctx: Ctx, raw: z.input<typeof previewCsvInput>) {
  const { csv } = previewCsvInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing a CSV");
  return previewCsv(csv);
}

/** What importing the file would do, read but not written (../pipeline/dry-run.ts); unmapped columns are what stays behind. */
export async function dryRunCsvImport(ctx: Ctx, raw: z.input<typeof dryRunCsvInput>) {
  const input = dryRunCsvInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing a CSV");
  const issues = csvIssues(input.csv, input.mapping, input.name, ctx.clock.now().toISOString());
  const mapped = new Set(Object.values(input.mapping.columns));
  const unmapped = previewCsv(input.csv).columns.filter((c) => !mapped.has(c));
  return dryRun(ctx, pagedReader("csv", issues, CSV_ROWS_PER_PAGE), unmapped.length > 0 ? [`columns not mapped: ${unmapped.join(", ")}`] : []);
}

/**
 * Imports a CSV's rows as issues of a project (owners and admins) with the mapping picked from
 * the preview. Rows have no numbers of ours: they take the project's next ones, and the run's
 * links keep which row became which issue, so the same file (by `name`) imported again updates
 * in place.
 */
export async function startCsvImport(ctx: Ctx, raw: z.input<typeof startCsvInput>) {
  const input = startCsvInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing a CSV");
  const issues = csvIssues(input.csv, input.mapping, input.name, ctx.clock.now().toISOString());
  const { runId } = await beginImport(ctx, pagedReader("csv", issues, CSV_ROWS_PER_PAGE), {
    sourceId: input.name,
    prefix: "",
    total: issues.length,
    projectId: input.projectId,
    newProject: input.newProject,
    action: "import_csv",
  });
  return { runId, total: issues.length };
}
