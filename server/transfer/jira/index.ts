/** Jira import (issue 29, decision 047): doors call these; runs are followed with `importStatus`. */
export { listJiraProjects, listJiraProjectsInput, startJiraImport, startJiraInput, dryRunJiraImport, dryRunJiraInput } from "./start.ts";
