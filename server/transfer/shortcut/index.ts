/** Shortcut import (issue 29, decision 065): doors call these; runs are followed with `importStatus`. */
export { findShortcutEpicInput, findShortcutEpicToImport, listShortcutEpics, listShortcutEpicsInput, listShortcutTeams, listShortcutTeamsInput, startShortcutImport, startShortcutInput, dryRunShortcutImport, dryRunShortcutInput } from "./start.ts";
