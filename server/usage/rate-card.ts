/**
 * The price of metered actions, in micro-credits (1,000,000 = $1), per value tier.
 * Reads, an empty `next_issue` and a `next_batch` peek are free.
 */
export const meterTiers = ["dispatch", "work", "bookkeeping", "plumbing", "heartbeat"] as const;
export type MeterTier = (typeof meterTiers)[number];

const MICRO_CREDITS_PER_USD = 1_000_000;

export const rateCard: Record<MeterTier, number> = {
  dispatch: 7_000,
  work: 5_000,
  bookkeeping: 3_000,
  plumbing: 1_000,
  heartbeat: 100,
};

/** The rate card as the summaries show it. */
export function rateCardView() {
  return {
    unit: "micro-credit" as const,
    microCreditsPerUsd: MICRO_CREDITS_PER_USD,
    tiers: meterTiers.map((tier) => ({ tier, microCredits: rateCard[tier] })),
    free: "reads, an empty next_issue, a next_batch peek",
  };
}

/**
 * The tier each metered tool is charged at, the one table of them: the services charge by it
 * (server/usage/meter.ts `meter`), and tools/list states the price from it. save_issue has two:
 * creating or a body edit is work, any other edit bookkeeping; a call pays its highest tier
 * once. Tools not listed are free: reads, and invites on every door (invite_member,
 * list_invites, revoke_invite, accept_invite: joining is never metered, decision 052). Dash and
 * CLI doors charge the tool their service implements; the Dash's and CLI's own actions
 * (force_release, and the key, role and setup-code actions after it) are named here as if they
 * were tools, so the ledger says what was done.
 */
export const toolTiers = {
  next_issue: ["dispatch"],
  next_batch: ["dispatch"],
  claim_issue: ["dispatch"],
  add_relation: ["dispatch"],
  save_issue: ["work", "bookkeeping"],
  checkpoint: ["work"],
  save_comment: ["work"],
  save_attachment: ["work"],
  save_attachment_file: ["work"],
  retract_comment: ["bookkeeping"],
  save_label: ["bookkeeping"],
  remove_relation: ["bookkeeping"],
  obsolete_attachment: ["bookkeeping"],
  mint_session_key: ["plumbing"],
  release_issue: ["plumbing"],
  force_release: ["plumbing"],
  suspend_member: ["plumbing"],
  reactivate_member: ["plumbing"],
  retire_member: ["plumbing"],
  revoke_connector: ["plumbing"],
  create_connector: ["plumbing"],
  set_connector_reviewer: ["plumbing"],
  set_member_role: ["plumbing"],
  set_member_scope: ["plumbing"],
  mint_key: ["plumbing"],
  revoke_key: ["plumbing"],
  rotate_key: ["plumbing"],
  create_setup_code: ["plumbing"],
  import_linear: ["plumbing"],
  import_jira: ["plumbing"],
  import_csv: ["plumbing"],
  import_asana: ["plumbing"],
  import_shortcut: ["plumbing"],
  import_clickup: ["plumbing"],
  claim_ghost: ["plumbing"],
  heartbeat: ["heartbeat"],
} as const satisfies Record<string, readonly MeterTier[]>;
export type MeteredTool = keyof typeof toolTiers;
export type TierOf<T extends MeteredTool> = (typeof toolTiers)[T][number];

/**
 * Wind-down: charged while there is credit, never refused (not for credit, not for the cap),
 * so a lapsed org can still renew, hand off and give back work, and cut off access.
 */
export const windDownTools: ReadonlySet<MeteredTool> = new Set<MeteredTool>([
  "heartbeat",
  "checkpoint",
  "release_issue",
  "revoke_connector",
  "suspend_member",
  "retire_member",
  "force_release",
  "revoke_key",
]);

/** Which calls of a tool are free though the tool is metered (what tools/list says beside the price). */
const freeWhen: Partial<Record<MeteredTool, string>> = {
  next_issue: " if it claims",
  next_batch: " if it claims",
  save_attachment_file: " per started MiB",
};

/** A price in dollars, as tools/list states it: 7,000 micro-credits is $0.007 (1,000,000 to the dollar). */
export const inDollars = (microCredits: number): string => `$${String(microCredits / MICRO_CREDITS_PER_USD)}`;

/**
 * What tools/list ends a metered tool's description with when billing is on: its price as charged,
 * in dollars in parentheses ("($0.007)", "($0.007 if it claims)"), the same figure as the
 * micro-credits the ledger counts in half the tokens on every session (decision 091).
 */
export function priceNote(tool: string): string | null {
  const tiers = (toolTiers as Record<string, readonly MeterTier[]>)[tool];
  if (!tiers) return null;
  const [first, second] = tiers.map((tier) => inDollars(rateCard[tier]));
  const price = second ? `${first} new or body, else ${second}` : first;
  return `(${price}${freeWhen[tool as MeteredTool] ?? ""})`;
}
