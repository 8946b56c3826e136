/**
 * The price of metered actions, in micro-credits (1,000,000 = $1), per value tier.
 * Reads, an empty `next_issue` and a `next_batch` peek are free.
 */
export const meterTiers = ["dispatch", "work", "bookkeeping", "plumbing", "heartbeat"] as const;
export type MeterTier = (typeof meterTiers)[number];

export const rateCard: Record<MeterTier, number> = {
  dispatch: 7_000,
  work: 5_000,
  bookkeeping: 3_000,
  plumbing: 1_000,
  heartbeat: 100,
};

/** Credit a new org starts with. */
export const signupCreditMicroCredits = 10_000_000;
