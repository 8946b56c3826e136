import type { CheckConclusion } from "../../db/schema/index.ts";

/** One check's result as a connector, a CI key or a person reports it. */
export interface CheckReport {
  check: string;
  conclusion: CheckConclusion;
  url: string | null;
  commit: string | null;
}

/**
 * What a finish's reports add up to (decision 045), from the latest result of each check
 * reported since the finish. With required checks: any of them red fails it, all of them
 * green passes it. With none named ("every check reported on the commit"): any red fails it,
 * and it passes once every check reported is green (one still running holds it pending).
 */
export function verdictOf(latest: ReadonlyMap<string, CheckConclusion>, required: readonly string[]): "passed" | "failed" | null {
  const counted = required.length > 0 ? required : [...latest.keys()];
  if (counted.some((check) => latest.get(check) === "failure")) return "failed";
  if (counted.length === 0) return null;
  return counted.every((check) => latest.get(check) === "success") ? "passed" : null;
}

/** The failing checks as a person and an agent read them: one line each. */
export function failureLines(failing: readonly CheckReport[]): string {
  return failing.map((r) => `- ${r.check}: ${r.conclusion}${r.commit ? ` at ${r.commit.slice(0, 12)}` : ""}${r.url ? ` (${r.url})` : ""}`).join("\n");
}
