/** The hot statements of billing: a charge against the credit slices, and their consolidation. */
import { charge, consolidate, type HotStatement } from "./functions.ts";

export const billingStatements: HotStatement[] = [
  // ── retasc_charge (0090; its pick as in 0058) ──
  {
    name: "charge: the month's spend",
    source: charge,
    sql: `SELECT coalesce(sum(s.month_spent), 0) FROM billing_credit_slices s
                                          WHERE s.org_id = p_org_id AND s.month_start = v_month`,
  },
  {
    name: "charge: a free covering slice",
    source: charge,
    sql: `SELECT s.slice FROM billing_credit_slices s
     WHERE s.org_id = p_org_id AND s.given_remaining + s.bought_remaining >= p_amount
     ORDER BY (s.slice + 16 - v_start) % 16 LIMIT 1 FOR UPDATE SKIP LOCKED`,
  },
  {
    name: "charge: a slice passed over yet locked",
    source: charge,
    sql: `SELECT 1 FROM billing_credit_slices s WHERE s.org_id = p_org_id AND s.xmax = pg_current_xact_id_if_assigned()::xid`,
  },
  {
    name: "charge: wait for a covering slice",
    source: charge,
    sql: `SELECT s.slice FROM billing_credit_slices s
       WHERE s.org_id = p_org_id AND s.given_remaining + s.bought_remaining >= p_amount
       ORDER BY s.slice LIMIT 1 FOR UPDATE`,
  },
  {
    name: "charge: the slice paid from (the one held, or the one picked)",
    source: charge,
    sql: `UPDATE billing_credit_slices
       SET given_remaining = given_remaining - least(given_remaining, p_amount),
           bought_remaining = bought_remaining - (p_amount - least(given_remaining, p_amount)),
           month_spent = CASE WHEN month_start = v_month THEN month_spent + p_amount ELSE p_amount END,
           month_start = v_month
     WHERE org_id = p_org_id AND slice = v_slice AND given_remaining + bought_remaining >= p_amount
    RETURNING slice`,
  },
  {
    name: "charge: the ledger row",
    source: charge,
    sql: `INSERT INTO billing_charges (org_id, user_id, key_id, runtime, tool, tier, micro_credits, issue_id, created_at)
  VALUES (p_org_id, p_user_id, p_key_id, p_runtime, p_tool, p_tier, v_charged, p_issue_id, p_now)`,
  },
  // ── retasc_consolidate_credit (0010) ──
  {
    name: "consolidate_credit: every slice locked",
    source: consolidate,
    sql: `SELECT 1 FROM billing_credit_slices WHERE org_id = p_org_id ORDER BY slice FOR UPDATE`,
  },
  {
    name: "consolidate_credit: the credit spread again",
    source: consolidate,
    sql: `UPDATE billing_credit_slices
     SET given_remaining = CASE WHEN slice < v_k THEN v_given / v_k + CASE WHEN slice < v_given % v_k THEN 1 ELSE 0 END ELSE 0 END,
         bought_remaining = CASE WHEN slice < v_k THEN v_bought / v_k + CASE WHEN slice < v_bought % v_k THEN 1 ELSE 0 END ELSE 0 END
   WHERE org_id = p_org_id`,
  },
];
