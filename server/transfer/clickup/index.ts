/** ClickUp import (issue 29, decision 074): doors call these; runs are followed with `importStatus`. */
export { listClickUpLocations, listClickUpLocationsInput, startClickUpImport, startClickUpInput, dryRunClickUpImport, dryRunClickUpInput } from "./start.ts";
