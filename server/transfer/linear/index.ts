/** Linear import (issue 16, decision 025): doors call these. */
export { listLinearTeams, startLinearImport, dryRunLinearImport, listTeamsInput, startInput, dryRunInput } from "./start.ts";
export { importStatus as linearImportStatus, statusInput } from "../pipeline/status.ts";
export { claimGhost, claimGhostInput, claimGhosts, claimGhostsInput, listGhosts } from "../pipeline/ghosts.ts";
