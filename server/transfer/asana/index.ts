/** Asana import (issue 29, decision 065): doors call these; runs are followed with `importStatus`. */
export { listAsanaProjects, listAsanaProjectsInput, startAsanaImport, startAsanaInput, dryRunAsanaImport, dryRunAsanaInput } from "./start.ts";
