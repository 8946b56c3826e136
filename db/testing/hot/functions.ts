/**
 * The SQL functions the hot statements are copied from, each with the md5 of its definition, and
 * the type and value of each PL/pgSQL variable a copy names (db/testing/hot-statements.ts).
 */

/** The functions the statements come from: signature → the md5 of their definition and the migration that wrote it. */
export const hotFunctions: Record<string, { md5: string; migration: string }> = {
  "retasc_next_issue(text,text,boolean,boolean,integer,text,text,text,timestamp with time zone,text,text,bigint,jsonb,text,text[])": {
    md5: "7bd33827952f6d8afedf72be54ac442c",
    migration: "0084_pick_locks_as_it_reads",
  },
  "retasc_key_budget(text,timestamp with time zone,text)": { md5: "2da897a320fa20bd89ade0a24a499fd7", migration: "0070_org_keyed_statements" },
  "retasc_take_lease(text,text,text,text,text,timestamp with time zone,text,text,bigint,text)": {
    md5: "54a6eec40d1ddb6bcce089cb53500268",
    migration: "0085_view_extras",
  },
  "retasc_record_expiry(text,text,text,timestamp with time zone,text)": { md5: "b5bf914d85867e412dee3bb1ab22bb94", migration: "0070_org_keyed_statements" },
  "retasc_abandoned_claim(text,text,text,timestamp with time zone)": { md5: "b0c296f4a8424ce93d1e1d03580c04f1", migration: "0070_org_keyed_statements" },
  "retasc_view_reads(text,timestamp with time zone,text)": { md5: "52225bff488e9482ea9a121e04271f79", migration: "0085_view_extras" },
  "retasc_claim_discussion(text,text)": { md5: "9166ffc2ed4db59a06229f34e94be028", migration: "0085_view_extras" },
  "retasc_issue_view_reads(issues,timestamp with time zone,boolean)": { md5: "b6eb87aca03e75799cf02380bb27cd6b", migration: "0085_view_extras" },
  "retasc_issue_discussion(issues)": { md5: "025faf9de8cb1b8473cf398e53ce5364", migration: "0085_view_extras" },
  "retasc_session_claims(text,text,timestamp with time zone,text,text)": { md5: "5e03246456f17282a8eb7182b50e5f28", migration: "0070_org_keyed_statements" },
  "retasc_next_wave(text,text,text[],text,boolean,timestamp with time zone)": { md5: "554b32980c0bb6fd278bc78018c88d41", migration: "0086_wave_without_lapsed_half" },
  "retasc_empty_poll(text,text,text[],text,boolean,timestamp with time zone,integer)": {
    md5: "d866b4e8da6c99d8d27282ec703eb3e8",
    migration: "0070_org_keyed_statements",
  },
  "retasc_finish(text,text,text,timestamp with time zone,text,text,text,jsonb)": {
    md5: "ed9ea127595509546f631e0a55bfb5d1",
    migration: "0087_claim_and_finish_read_less",
  },
  "retasc_charge(text,text,text,text,text,text,bigint,text,boolean,timestamp with time zone)": {
    md5: "9adb3268c8e32b3f99641246fa42c7a0",
    migration: "0090_held_slice_charge_in_one_step",
  },
  "retasc_consolidate_credit(text,bigint)": { md5: "fe3d3ef756dbb08155db0354758bb22c", migration: "0010_billing_functions" },
};

/** Each variable a statement names: its type and the value it is explained with (one org throughout). */
export const variableTypes: Record<string, [string, string | null]> = {
  p_org_id: ["text", "org_a"],
  p_project_id: ["text", "prj_a"],
  p_project_ids: ["text[]", null],
  p_check_sla: ["boolean", "true"],
  p_user_id: ["text", "user_a"],
  p_key_id: ["text", "key_a"],
  p_runtime: ["text", "claude-code"],
  p_all_lanes: ["boolean", "false"],
  p_now: ["timestamptz", "2026-12-06T12:00:00Z"],
  p_issue_id: ["text", "iss_a"],
  p_lease_id: ["text", "lse_a"],
  p_token_hash: ["text", "hash"],
  p_session_id: ["text", "ses_a"],
  p_except: ["text", "iss_b"],
  p_identifier: ["text", "WEB-1"],
  p_amount: ["bigint", "7000"],
  p_tool: ["text", "next_issue"],
  p_tier: ["text", "dispatch"],
  v_passed: ["text[]", "{}"],
  "p_issue.id": ["text", "iss_a"],
  "p_issue.org_id": ["text", "org_a"],
  "p_issue.parent_id": ["text", "iss_b"],
  "p_issue.lease_id": ["text", "lse_a"],
  "p_issue.assignee_id": ["text", "user_a"],
  "p_issue.author_id": ["text", "user_a"],
  v_id: ["text", "iss_a"],
  v_now: ["timestamptz", "2026-12-06T12:00:00Z"],
  v_fence: ["integer", "2"],
  v_expires: ["timestamptz", "2026-12-06T12:30:00Z"],
  v_review: ["boolean", "false"],
  v_row: ["text", null],
  "v_row.id": ["text", "iss_a"],
  "v_row.fence": ["integer", "1"],
  "v_row.lease_id": ["text", "lse_a"],
  "v_row.identifier": ["text", "WEB-1"],
  v_level: ["smallint", "3"],
  v_from: ["text", "doing"],
  "v_lease.fence": ["integer", "1"],
  "v_issue.status": ["text", "doing"],
  v_count: ["integer", "3"],
  v_reason: ["text", "quarantined after 3 abandoned claims"],
  v_start: ["integer", "5"],
  v_month: ["timestamptz", "2026-12-01T00:00:00Z"],
  v_slice: ["integer", "3"],
  v_charged: ["bigint", "7000"],
  v_k: ["integer", "4"],
  v_given: ["bigint", "100000"],
  v_bought: ["bigint", "0"],
};

export interface HotStatement {
  /** function: what the statement does there. */
  name: string;
  /** The function's signature (a key of hotFunctions), or the TypeScript file holding the statement. */
  source: string;
  sql: string;
  /**
   * Why the statement still reads every partition of a table, until the reason is removed: the
   * test requires exactly these to be wide, so one that starts to prune (or one more that stops)
   * fails it until this list is brought up to date.
   */
  wide?: string;
}

/** The signatures of hotFunctions, one name each for the statements' `source`. */
export const nextIssue = "retasc_next_issue(text,text,boolean,boolean,integer,text,text,text,timestamp with time zone,text,text,bigint,jsonb,text,text[])";
export const keyBudget = "retasc_key_budget(text,timestamp with time zone,text)";
export const takeLease = "retasc_take_lease(text,text,text,text,text,timestamp with time zone,text,text,bigint,text)";
export const recordExpiry = "retasc_record_expiry(text,text,text,timestamp with time zone,text)";
export const abandonedClaim = "retasc_abandoned_claim(text,text,text,timestamp with time zone)";
export const viewReads = "retasc_view_reads(text,timestamp with time zone,text)";
export const claimDiscussion = "retasc_claim_discussion(text,text)";
export const issueViewReads = "retasc_issue_view_reads(issues,timestamp with time zone,boolean)";
export const issueDiscussion = "retasc_issue_discussion(issues)";
export const sessionClaims = "retasc_session_claims(text,text,timestamp with time zone,text,text)";
export const nextWave = "retasc_next_wave(text,text,text[],text,boolean,timestamp with time zone)";
export const emptyPoll = "retasc_empty_poll(text,text,text[],text,boolean,timestamp with time zone,integer)";
export const finish = "retasc_finish(text,text,text,timestamp with time zone,text,text,text,jsonb)";
export const charge = "retasc_charge(text,text,text,text,text,text,bigint,text,boolean,timestamp with time zone)";
export const consolidate = "retasc_consolidate_credit(text,bigint)";
