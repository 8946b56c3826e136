/** Linear import (issue 16, decision 025): doors call these. */
export { listLinearTeams, startLinearImport, listTeamsInput, startInput, fetchSettled } from "./start.ts";
export { linearImportStatus, statusInput } from "./status.ts";
export { claimGhost, claimGhostInput, claimGhosts, claimGhostsInput, listGhosts } from "./ghosts.ts";
export { applyLinearRun } from "./apply-run.ts";
