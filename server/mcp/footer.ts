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

/**
 * What a hosted key's claim reply adds (`retasc key mint --hosted`): no watchdog proxy will ever
 * heartbeat it, so it is told what does renew the claim instead of being left to assume one does.
 * Null for any other key, and for a reply that took no claim.
 */
export function hostedClaimLine(principal: Principal, output: object): string | null {
  if (!principal.hosted || !("renewal" in output)) return null;
  return output.renewal === "calls"
    ? "Hosted key, no watchdog: every call of this MCP session renews this claim; checkpoint before a silence longer than the lease."
    : "Hosted key, no watchdog, and this call sent no Mcp-Session-Id: nothing renews this claim but heartbeat and checkpoint; call one before the lease ends.";
}
