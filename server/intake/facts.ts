/** A connector as intake applies its events, and a source issue's fields as Retasc reads them. */
import type { ConnectorProvider } from "../../db/schema/index.ts";
import { BODY_MAX_CHARS } from "../issues/schemas.ts";
import type { SourceIssue } from "./events.ts";

export interface ConnectorFacts {
  id: string;
  orgId: string;
  provider: ConnectorProvider;
  repo: string;
  projectPrefix: string;
  intakeLabel: string;
  triageAll: boolean;
  /** The pull/merge request stream's reviewer, when the stream is on. */
  reviewerId: string | null;
}

export const providerName: Record<ConnectorProvider, string> = { github: "GitHub", gitlab: "GitLab" };

/** Source labels as Retasc labels: trimmed, at most 64 characters, the connector's own first. */
export function labelsOf(connector: ConnectorFacts, issue: SourceIssue): string[] {
  const names = [connector.intakeLabel, ...issue.labels].map((l) => l.trim().slice(0, 64)).filter((l) => l.length > 0);
  return [...new Set(names)].slice(0, 50);
}

export const titleOf = (issue: SourceIssue) => issue.title.trim().slice(0, 500) || `(untitled #${issue.number})`;
export const bodyOf = (issue: SourceIssue) => issue.body.slice(0, BODY_MAX_CHARS);
/** An ISO instant (GitHub's milestone) or a YYYY-MM-DD date (GitLab), as save_issue reads them; anything else is no date. */
export const dueOf = (issue: SourceIssue) => (issue.dueAt && /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2}))?$/.test(issue.dueAt) ? issue.dueAt : null);
