import type { Principal } from "../context.ts";

/** What a write landed in: the issues it touched (named by their projects), or the org as a whole. */
export type Landing = readonly string[] | "org";

/**
 * The line a write a person could be wrong about (a claim, a filed issue, a comment, a placeholder
 * claimed) ends with in the text agents read, so a transcript shows where it went: "— in Acme / Web".
 * The key's own project by its name, any other by its prefix (an org-wide key's claims, save_issue's
 * project argument). None for a principal not read from a key (it carries no names).
 */
export function footerLine(principal: Principal, landing: Landing | null): string | null {
  if (!principal.orgName || landing === null) return null;
  if (landing === "org") return `— in ${principal.orgName}, org-wide`;
  const prefixes = [...new Set(landing.map((identifier) => identifier.slice(0, identifier.lastIndexOf("-"))))];
  if (prefixes.length === 0) return null;
  const names = prefixes.map((prefix) => (prefix === principal.projectPrefix && principal.projectName ? principal.projectName : prefix));
  return `— in ${principal.orgName} / ${names.join(", ")}`;
}

/** The landing of a reply that names one issue as `identifier` (a claim, save_issue), if it does. */
export const issueLanding = (output: object): Landing | null =>
  "identifier" in output && typeof output.identifier === "string" ? [output.identifier] : null;
