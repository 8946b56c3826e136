import { z } from "zod";
import { issueStatuses, linearImportPhases } from "../../../db/schema/index.ts";
import { importHistory, importHistoryInput, latestImport } from "../../transfer/pipeline/status.ts";
import { listImportSources, runImport, runImportInput } from "../../transfer/sources.ts";
import { defineTool, outsideWrite, readOnly } from "../tool.ts";

const tally = z.record(z.string(), z.number().int());

/** One run as latest_import shows it; import_history lists the same shape, published once (registry.ts publishedBy). */
export const importRunOutput = z.object({
  runId: z.string(),
  source: z.string(),
  teamKey: z.string().describe("the source's key (a Linear team's, a Jira project's); empty for the others"),
  projectId: z.string(),
  phase: z.enum(linearImportPhases),
  done: z.number().int(),
  total: z.number().int(),
  counts: tally.nullable().describe("created, updated, unchanged (issues), comments, ghosts, filesCopied, linksKept; null until the apply counts"),
  linkReasons: tally.describe("why attachments stayed links: link, tooLarge, failed"),
  failure: z.string().nullable().describe("a failed run's code: UNAUTHORIZED, RATE_LIMITED, UNAVAILABLE, FETCH_INTERRUPTED, NUMBER_TAKEN, APPLY_FAILED"),
  waitingUntil: z.string().nullable().describe("the source asked to wait (a 429) until then"),
  startedAt: z.string(),
  finishedAt: z.string().nullable(),
  lastImportAt: z.string().nullable().optional().describe("latest_import only: when this source was last imported before"),
});

export const importTools = [
  defineTool({
    name: "list_import_sources",
    title: "List import sources",
    group: "import",
    description: "Call (owner or admin) before run_import: what each source needs from your human.",
    input: z.object({}),
    output: z.object({
      sources: z.array(
        z.object({
          source: z.string(),
          needs: z.string().describe("run_import's arguments to ask your human for, comma-separated"),
          token: z.string().describe("what token is, and where to make one"),
          target: z.string().describe("what target names"),
        }),
      ),
    }),
    annotations: readOnly,
    handler: (ctx) => listImportSources(ctx),
  }),
  defineTool({
    name: "run_import",
    title: "Import from another tracker",
    group: "import",
    description:
      "Call (owner or admin) to move your human's backlog from another tracker or a CSV. No target: what the " +
      "token sees (a CSV: its columns). Else a dry run (counts, mappings, placeholders, what stays behind) for " +
      "your human; dryRun:false runs it; latest_import follows. project: a prefix (made if new), by default the " +
      "source's key or your key's.",
    input: runImportInput,
    output: z.object({
      targets: z
        .array(z.object({ target: z.string(), name: z.string(), issueCount: z.number().int(), lastImportAt: z.string().nullable() }))
        .optional()
        .describe("without target: what the token sees"),
      dryRun: z.boolean().optional(),
      source: z.string().optional(),
      counts: tally.optional().describe("issues, containers, comments, attachments, filesCopied, linksKept, relations, labels"),
      linkReasons: tally.optional().describe("why attachments would stay links: link, tooLarge"),
      known: tally.optional().describe("issues and comments an earlier import brought (updated or left as they are)"),
      statuses: z.array(z.object({ from: z.string(), to: z.enum(issueStatuses), issues: z.number().int() })).optional(),
      priorities: z.array(z.object({ from: z.string(), to: z.number().int(), issues: z.number().int() })).optional(),
      ghosts: z.array(z.object({ name: z.string(), email: z.string().nullable() })).optional().describe("people who become placeholders"),
      leftBehind: z.array(z.string()).optional(),
      preview: z.record(z.string(), z.unknown()).optional().describe("a CSV's: columns, rows (the first five), rowCount, mapping (guessed from the header, or the dry run's), statuses, priorities"),
      runId: z.string().optional().describe("the run begun (dryRun false)"),
      total: z.number().int().optional(),
      project: z.string().optional().describe("the prefix of the project it goes into"),
    }),
    annotations: outsideWrite,
    handler: (ctx, input) => runImport(ctx, input),
    // The project a run goes into, named as a prefix (footerLine takes identifiers); a dry run lands nothing.
    landsIn: (output) => ("runId" in output && output.project ? [`${output.project}-`] : null),
  }),
  defineTool({
    name: "latest_import",
    title: "Latest import",
    group: "import",
    description: "Call to follow run_import: the org's latest import's phase, progress, counts or failure.",
    input: z.object({}),
    output: importRunOutput,
    annotations: readOnly,
    handler: (ctx) => latestImport(ctx),
  }),
  defineTool({
    name: "import_history",
    title: "Import history",
    group: "import",
    description: "Call for the org's imports, newest first, with outcomes; paged.",
    input: importHistoryInput,
    output: z.object({ imports: z.array(importRunOutput), nextCursor: z.string().optional() }),
    annotations: readOnly,
    handler: (ctx, input) => importHistory(ctx, input),
  }),
];
