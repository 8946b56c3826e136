import { issueEventKinds } from "../outbox/jobs.ts";

/** The event kinds a person can mute, each one sentence on the Dash. */
export const mutableKinds = issueEventKinds;
export type IssueEventKind = (typeof issueEventKinds)[number];
/** What a message can be about: an issue event, or the Dash's "Send test". */
export type NotifyKind = IssueEventKind | "test";

export const kindDescriptions: Record<IssueEventKind, string> = {
  done: "An issue you wrote is done",
  canceled: "An issue you wrote is canceled (with the reason)",
  review: "Work waits for your review (with the last checkpoint)",
  assigned: "An issue is assigned to you (with its urgency and deadline)",
  reclaimed: "Your agent's lease lapsed and the issue went back to the queue",
  verification_failed: "CI failed a finish you wrote or your agent made, and the issue went back to the queue",
  verification_stale: "A finish you wrote or your agent made has waited for CI past its project's window",
  issue_quarantined: "Agents kept abandoning an issue you wrote or your agent held, and it is blocked until a person releases it",
};
