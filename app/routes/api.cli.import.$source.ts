import type { Route } from "./+types/api.cli.import.$source";
import { cliJson, cliOrgAction, cliQueryCtx, type CliOrgActions } from "../cli-api.server.ts";
import { DomainError } from "../../server/errors.ts";
import { importStatus } from "../../server/transfer/pipeline/status.ts";
import { dryRunLinearImport, listLinearTeams, startLinearImport } from "../../server/transfer/linear/index.ts";
import { dryRunJiraImport, listJiraProjects, startJiraImport } from "../../server/transfer/jira/index.ts";
import { dryRunAsanaImport, listAsanaProjects, startAsanaImport } from "../../server/transfer/asana/index.ts";
import { dryRunShortcutImport, findShortcutEpicToImport, listShortcutEpics, listShortcutTeams, startShortcutImport } from "../../server/transfer/shortcut/index.ts";
import { dryRunClickUpImport, listClickUpLocations, startClickUpImport } from "../../server/transfer/clickup/index.ts";
import { dryRunCsvImport, previewCsvImport, startCsvImport } from "../../server/transfer/csv/index.ts";
import { importAgain } from "../../server/transfer/again.ts";
import { forgetImportCredential, listKeptCredentials } from "../../server/transfer/pipeline/kept-credentials.ts";

/** `retasc import <source>` polls its run: `?orgId=&runId=` answers phase, done of total, a wait the source asked for, and the last import's date. */
export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => {
    const { ctx, params } = await cliQueryCtx(request, context);
    return importStatus(ctx, { runId: params.get("runId") ?? "" });
  });
}

/** Each source's actions; the services parse and check their input. */
const sources = {
  linear: {
    teams: listLinearTeams,
    "dry-run": dryRunLinearImport,
    start: startLinearImport,
  },
  jira: {
    projects: listJiraProjects,
    "dry-run": dryRunJiraImport,
    start: startJiraImport,
  },
  asana: {
    projects: listAsanaProjects,
    "dry-run": dryRunAsanaImport,
    start: startAsanaImport,
  },
  shortcut: {
    teams: listShortcutTeams,
    epics: listShortcutEpics,
    // --epic: the one epic it names, resolved (and refused: archived, unseen, a name two have) by the service.
    epic: findShortcutEpicToImport,
    "dry-run": dryRunShortcutImport,
    start: startShortcutImport,
  },
  clickup: {
    locations: listClickUpLocations,
    "dry-run": dryRunClickUpImport,
    start: startClickUpImport,
  },
  csv: {
    preview: previewCsvImport,
    "dry-run": dryRunCsvImport,
    start: startCsvImport,
  },
  // Credentials kept to import again (decision 094): `{source, sourceId}` names one.
  kept: {
    list: listKeptCredentials,
    again: importAgain,
    forget: forgetImportCredential,
  },
} as const;

/**
 * `{ orgId, action, ... }` to `/api/cli/import/<linear|jira|asana|shortcut|clickup|csv>`: credentials (a
 * Linear key, a Jira email and API token, an Asana access token, a Shortcut API token, a ClickUp personal token) and CSV text travel in the body only (never a URL, so no access log
 * holds them) and are used for this run alone (decisions 025 and 047).
 */
export function action({ request, context, params }: Route.ActionArgs) {
  const source = params.source;
  if (!Object.hasOwn(sources, source)) {
    return cliJson(context, async () => {
      throw new DomainError("NOT_FOUND", `no import source ${source.slice(0, 40)}`, "Import from linear, jira, asana, shortcut, clickup or csv.");
    });
  }
  // Each service parses its own input (zod), so the body's fields go to it as they came.
  return cliOrgAction(request, context, sources[source as keyof typeof sources] as unknown as CliOrgActions);
}
