/**
 * The hot statements of dispatch, finish, the view reads and the leases, copied from the SQL
 * functions that run them (the latest definition of each), for db/partition-plan.test.ts
 * (issue 36, decision 099). A copy keeps the statement as written, PL/pgSQL variables and all
 * (`p_org_id`, `v_row.id`: the test binds each as a parameter of the type in `variableTypes`), less
 * its `INTO` target; `PERFORM` reads as `SELECT`. `md5` is that of the function's
 * `pg_get_functiondef`: when a function changes, the test fails until its statements here are
 * copied again and the hash recorded anew.
 */

/** Tables partitioned by hash of org_id in the test's scratch schema. */
export const hotTables = [
  "issues",
  "leases",
  "activity",
  "outbox",
  "relations",
  "checkpoints",
  "comments",
  "attachments",
  "billing_credit_slices",
  "billing_charges",
  "agent_keys",
];

export const partitions = 16;

/**
 * The tables that carry no org_id, each for a reason: they belong to no org, or arrive before
 * their org is known. Every other table carries it (an org-owned table added without it fails the
 * plan test). Which of these a stack per group of orgs keeps in the global directory: decision 099.
 */
export const globalTables = [
  // People and their sign-in (better-auth): a person belongs to several orgs.
  "user",
  "account",
  "session",
  "verification",
  "device_code",
  // OAuth clients, consents, grants and tokens: a token names its key's org only once resolved.
  "oauth_access_token",
  "oauth_client",
  "oauth_client_assertion",
  "oauth_client_resource",
  "oauth_consent",
  "oauth_grants",
  "oauth_refresh_token",
  "oauth_resource",
  // The orgs themselves.
  "orgs",
  // A Stripe refund or dispute may arrive before the purchase that names its org.
  "billing_stripe_reversals",
  // Per deployment: the issue counts /metrics reads (decision 077) and the jobs' receipts.
  "issue_count_changes",
  "issue_status_counts",
  "job_receipts",
];

/** The functions the statements come from: signature → the md5 of their definition and the migration that wrote it. */
export const hotFunctions: Record<string, { md5: string; migration: string }> = {
  "retasc_next_issue(text,text,boolean,boolean,integer,text,text,text,timestamp with time zone,text,text,bigint,jsonb,text,text[])": {
    md5: "d6b9fae5f2664b69d25d77c0a332a99b",
    migration: "0070_org_keyed_statements",
  },
  "retasc_key_budget(text,timestamp with time zone,text)": { md5: "2da897a320fa20bd89ade0a24a499fd7", migration: "0070_org_keyed_statements" },
  "retasc_take_lease(text,text,text,text,text,timestamp with time zone,text,text,bigint,text)": {
    md5: "00997d297728f644f5b5c08c39ae8592",
    migration: "0070_org_keyed_statements",
  },
  "retasc_record_expiry(text,text,text,timestamp with time zone,text)": { md5: "b5bf914d85867e412dee3bb1ab22bb94", migration: "0070_org_keyed_statements" },
  "retasc_abandoned_claim(text,text,text,timestamp with time zone)": { md5: "b0c296f4a8424ce93d1e1d03580c04f1", migration: "0070_org_keyed_statements" },
  "retasc_view_reads(text,timestamp with time zone,text)": { md5: "20c8fddc22e558b6c341afc788b278ed", migration: "0070_org_keyed_statements" },
  "retasc_claim_discussion(text,text)": { md5: "2fcc8af91b384a81e6515921b1b31818", migration: "0070_org_keyed_statements" },
  "retasc_session_claims(text,text,timestamp with time zone,text,text)": { md5: "5e03246456f17282a8eb7182b50e5f28", migration: "0070_org_keyed_statements" },
  "retasc_next_wave(text,text,text[],text,boolean,timestamp with time zone)": { md5: "e61d680c407ca4fe787736d6e74639a5", migration: "0064_picks_read_lease_check" },
  "retasc_empty_poll(text,text,text[],text,boolean,timestamp with time zone,integer)": {
    md5: "d866b4e8da6c99d8d27282ec703eb3e8",
    migration: "0070_org_keyed_statements",
  },
  "retasc_finish(text,text,text,timestamp with time zone,text,text,text,jsonb)": { md5: "66b7dd19a699db69d43379074d9e8e24", migration: "0070_org_keyed_statements" },
  "retasc_charge(text,text,text,text,text,text,bigint,text,boolean,timestamp with time zone)": {
    md5: "1c083ba61186964d9b34c981756dc8d4",
    migration: "0058_passed_over_slice_is_held",
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
  v_held: ["text", "org_a:3"],
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

const projectIndexes =
  "a project key's statement names no org: the indexes it reads (issues_unleased_idx, issues_sla_next_idx) lead with project_id, and naming " +
  "the org beside them turns the generic plan to issues_org_open_idx (org_id, project_id) and a sort of the project's open issues. It names " +
  "the org once those indexes lead with (org_id, project_id), built concurrently (decision 099)";
const verificationIndex =
  "the pending finishes are read through issues_verification_pending_idx, which has no org_id: naming the org turns the plan to " +
  "issues_org_status_idx and every done issue of the org. It names the org once that index leads with org_id (decision 099)";

const nextIssue = "retasc_next_issue(text,text,boolean,boolean,integer,text,text,text,timestamp with time zone,text,text,bigint,jsonb,text,text[])";
const keyBudget = "retasc_key_budget(text,timestamp with time zone,text)";
const takeLease = "retasc_take_lease(text,text,text,text,text,timestamp with time zone,text,text,bigint,text)";
const recordExpiry = "retasc_record_expiry(text,text,text,timestamp with time zone,text)";
const abandonedClaim = "retasc_abandoned_claim(text,text,text,timestamp with time zone)";
const viewReads = "retasc_view_reads(text,timestamp with time zone,text)";
const claimDiscussion = "retasc_claim_discussion(text,text)";
const sessionClaims = "retasc_session_claims(text,text,timestamp with time zone,text,text)";
const nextWave = "retasc_next_wave(text,text,text[],text,boolean,timestamp with time zone)";
const emptyPoll = "retasc_empty_poll(text,text,text[],text,boolean,timestamp with time zone,integer)";
const finish = "retasc_finish(text,text,text,timestamp with time zone,text,text,text,jsonb)";
const charge = "retasc_charge(text,text,text,text,text,text,bigint,text,boolean,timestamp with time zone)";
const consolidate = "retasc_consolidate_credit(text,bigint)";

const orderBy = `ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC`;
const dispatchable = `i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending'`;
const lanes = `(p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)`;

export const hotStatements: HotStatement[] = [
  // ── retasc_next_issue (0070_org_keyed_statements) ──
  {
    name: "next_issue: SLA due, org-wide",
    source: nextIssue,
    sql: `SELECT 1 FROM issues i WHERE i.org_id = p_org_id AND i.sla_next_at <= p_now
                                                   AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))`,
  },
  {
    name: "next_issue: project key's project and SLA due",
    wide: projectIndexes,
    source: nextIssue,
    sql: `SELECT p.id IS NULL, p_check_sla AND EXISTS (SELECT 1 FROM issues i WHERE i.project_id = p_project_id AND i.sla_next_at <= p_now)
      FROM (SELECT 1) AS one LEFT JOIN projects p ON p.id = p_project_id AND p.org_id = p_org_id`,
  },
  {
    name: "next_issue: the pick, org-wide",
    source: nextIssue,
    sql: `SELECT i.id FROM (
        (SELECT i.id, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM issues i
          WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
            AND ${dispatchable} AND i.lease_check_at IS NULL
            AND ${lanes}
            AND i.id <> ALL(v_passed)
          ${orderBy}
          LIMIT 1)
        UNION ALL
        (SELECT i.id, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM (SELECT i.id, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number, i.submitter_id, i.assignee_id FROM issues i
          WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
            AND ${dispatchable} AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now OFFSET 0) i
          WHERE ${lanes}
            AND i.id <> ALL(v_passed)
          ${orderBy}
          LIMIT 1)) i
       ${orderBy}
       LIMIT 1`,
  },
  {
    name: "next_issue: the pick, a project key",
    wide: projectIndexes,
    source: nextIssue,
    sql: `SELECT i.id FROM (
        (SELECT i.id, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM issues i
          WHERE i.project_id = p_project_id
            AND ${dispatchable} AND i.lease_check_at IS NULL
            AND ${lanes}
            AND i.id <> ALL(v_passed)
          ${orderBy}
          LIMIT 1)
        UNION ALL
        (SELECT i.id, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM (SELECT i.id, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number, i.submitter_id, i.assignee_id FROM issues i
          WHERE i.org_id = p_org_id AND i.project_id = p_project_id
            AND ${dispatchable} AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now OFFSET 0) i
          WHERE ${lanes}
            AND i.id <> ALL(v_passed)
          ${orderBy}
          LIMIT 1)) i
       ${orderBy}
       LIMIT 1`,
  },
  {
    name: "next_issue: lock the pick",
    source: nextIssue,
    sql: `SELECT 1 FROM issues i
     WHERE i.org_id = p_org_id AND i.id = v_id
       AND ${dispatchable}
       AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= p_now)
       AND ${lanes}
       FOR NO KEY UPDATE SKIP LOCKED`,
  },
  // ── retasc_key_budget (0070_org_keyed_statements) ──
  {
    name: "key_budget: the key's live leases",
    source: keyBudget,
    sql: `SELECT count(*) FROM leases WHERE org_id = p_org_id AND key_id = p_key_id AND ended_at IS NULL AND expires_at > p_now`,
  },
  // ── retasc_take_lease (0070_org_keyed_statements) ──
  { name: "take_lease: the issue", source: takeLease, sql: `SELECT * FROM issues WHERE org_id = p_org_id AND id = p_issue_id` },
  { name: "take_lease: quarantined by the lapse", source: takeLease, sql: `SELECT 1 FROM issues WHERE org_id = p_org_id AND id = p_issue_id AND quarantined_at IS NOT NULL` },
  {
    name: "take_lease: a quarantined issue's lease cleared",
    source: takeLease,
    sql: `UPDATE issues SET lease_id = NULL, lease_token_hash = NULL, lease_expires_at = NULL WHERE org_id = p_org_id AND id = p_issue_id`,
  },
  {
    name: "take_lease: the previous lease's end",
    source: takeLease,
    sql: `SELECT greatest(p_now, l.ended_at) FROM leases l WHERE l.org_id = p_org_id AND l.issue_id = p_issue_id AND l.fence = v_row.fence`,
  },
  {
    name: "take_lease: the lease",
    source: takeLease,
    sql: `INSERT INTO leases (id, org_id, issue_id, fence, key_id, user_id, runtime, claimed_at, heartbeat_at, expires_at, session_id, token_hash)
  VALUES (p_lease_id, p_org_id, p_issue_id, v_fence, p_key_id, coalesce(p_user_id, 'system'), coalesce(p_runtime, 'unknown'),
          v_now, v_now, v_expires, p_session_id, p_token_hash)`,
  },
  {
    name: "take_lease: the issue held",
    source: takeLease,
    sql: `UPDATE issues
     SET fence = v_fence, lease_id = p_lease_id, lease_token_hash = p_token_hash, lease_expires_at = v_expires,
         status = CASE WHEN v_review THEN 'review' ELSE 'doing' END,
         first_claimed_at = coalesce(first_claimed_at, v_now), updated_at = v_now
   WHERE org_id = p_org_id AND id = p_issue_id
  RETURNING *`,
  },
  {
    name: "take_lease: the activity",
    source: takeLease,
    sql: `INSERT INTO activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
  VALUES (p_org_id, p_issue_id, 'claimed', p_user_id, p_key_id, p_runtime,
          jsonb_build_object('fence', v_fence, 'expiresAt', retasc_iso(v_expires), 'review', v_review), v_now)`,
  },
  // ── retasc_record_expiry (0070_org_keyed_statements) ──
  {
    name: "record_expiry: the lapsed lease ended",
    source: recordExpiry,
    sql: `UPDATE leases SET ended_at = p_now, end_reason = 'expired', reclaim_recorded_at = p_now
   WHERE org_id = p_org_id AND id = p_lease_id AND ended_at IS NULL
  RETURNING *`,
  },
  {
    name: "record_expiry: the outbox row",
    source: recordExpiry,
    sql: `INSERT INTO outbox (job, payload, org_id)
  VALUES ('notify.issue_event', jsonb_build_object('orgId', p_org_id, 'issueId', p_issue_id, 'kind', 'reclaimed', 'actorId', NULL), p_org_id)`,
  },
  // ── retasc_abandoned_claim (0070_org_keyed_statements) ──
  { name: "abandoned_claim: the lease", source: abandonedClaim, sql: `SELECT * FROM leases WHERE org_id = p_org_id AND id = p_lease_id` },
  { name: "abandoned_claim: the issue", source: abandonedClaim, sql: `SELECT * FROM issues WHERE org_id = p_org_id AND id = p_issue_id` },
  {
    name: "abandoned_claim: a checkpoint under the lease",
    source: abandonedClaim,
    sql: `SELECT 1 FROM checkpoints c WHERE c.org_id = p_org_id AND c.issue_id = p_issue_id AND c.lease_id = p_lease_id`,
  },
  {
    name: "abandoned_claim: the count reset",
    source: abandonedClaim,
    sql: `UPDATE issues SET abandoned_claims = 0, abandoned_fence = v_lease.fence WHERE org_id = p_org_id AND id = p_issue_id`,
  },
  {
    name: "abandoned_claim: the count",
    source: abandonedClaim,
    sql: `UPDATE issues SET abandoned_claims = v_count, abandoned_fence = v_lease.fence WHERE org_id = p_org_id AND id = p_issue_id`,
  },
  {
    name: "abandoned_claim: quarantined",
    source: abandonedClaim,
    sql: `UPDATE issues
     SET abandoned_claims = v_count, abandoned_fence = v_lease.fence, status = 'blocked',
         quarantined_at = p_now, quarantine_reason = v_reason, updated_at = p_now,
         sla_next_at = CASE WHEN v_issue.status = 'review' THEN p_now ELSE sla_next_at END
   WHERE org_id = p_org_id AND id = p_issue_id`,
  },
  // ── retasc_view_reads (0070_org_keyed_statements) ──
  {
    name: "view_reads: the issue's view",
    source: viewReads,
    sql: `SELECT json_build_object(
    'rels', (SELECT coalesce(json_agg(json_build_object('type', r.type, 'sourceId', r.source_id, 'targetId', r.target_id,
                                                       'identifier', o.identifier, 'status', o.status, 'projectId', o.project_id)), '[]')
               FROM relations r JOIN issues o ON o.org_id = p_org_id AND o.id = CASE WHEN r.source_id = i.id THEN r.target_id ELSE r.source_id END
              WHERE r.org_id = p_org_id AND (r.source_id = i.id OR r.target_id = i.id)),
    'labels', (SELECT coalesce(json_agg(l.name ORDER BY l.name), '[]')
                 FROM issue_labels il JOIN labels l ON l.id = il.label_id WHERE il.issue_id = i.id),
    'children', (SELECT coalesce(json_agg(json_build_object('identifier', c.identifier, 'projectId', c.project_id) ORDER BY c.number), '[]')
                   FROM issues c WHERE c.org_id = p_org_id AND c.parent_id = i.id),
    'parent', (SELECT json_build_object('identifier', p.identifier, 'projectId', p.project_id) FROM issues p WHERE p.org_id = p_org_id AND p.id = i.parent_id),
    'checkpoint', (SELECT json_build_object('doneEnc', cp.done_enc, 'nextEnc', cp.next_enc, 'gotchasEnc', cp.gotchas_enc,
                                            'noteEnc', cp.note_enc, 'branch', cp.branch, 'runtime', cp.runtime,
                                            'userId', cp.user_id, 'createdAt', retasc_iso(cp.created_at))
                     FROM checkpoints cp WHERE cp.org_id = p_org_id AND cp.issue_id = i.id ORDER BY cp.created_at DESC, cp.id DESC LIMIT 1),
    'lease', (SELECT json_build_object('userId', l.user_id, 'runtime', l.runtime, 'keyId', l.key_id, 'fence', l.fence,
                                       'expiresAt', retasc_iso(l.expires_at),
                                       'holder', CASE WHEN u.id IS NULL THEN NULL
                                                      ELSE json_build_object('userId', u.id, 'email', u.email, 'name', u.name) END)
                FROM leases l LEFT JOIN "user" u ON u.id = l.user_id
               WHERE l.org_id = p_org_id AND l.id = i.lease_id AND i.lease_expires_at > p_now),
    'people', (SELECT coalesce(json_agg(json_build_object('userId', u.id, 'email', u.email, 'name', u.name)), '[]')
                 FROM "user" u WHERE u.id IN (i.assignee_id, i.author_id)))
    FROM issues i WHERE i.org_id = p_org_id AND i.id = p_issue_id`,
  },
  // ── retasc_claim_discussion (0070_org_keyed_statements) ──
  {
    name: "claim_discussion: latest comments and attachments",
    source: claimDiscussion,
    sql: `SELECT json_build_object(
    'comments', (SELECT coalesce(json_agg(json_build_object('id', c.id, 'bodyEnc', c.body_enc, 'createdAt', retasc_iso(c.created_at),
                                                          'runtime', c.runtime, 'name', c.name)
                                        ORDER BY c.created_at DESC, c.id DESC), '[]')
                   FROM (SELECT cm.id, cm.body_enc, cm.created_at, cm.runtime, u.name
                           FROM comments cm LEFT JOIN "user" u ON u.id = cm.author_id
                          WHERE cm.org_id = p_org_id AND cm.issue_id = p_issue_id AND cm.retracted_at IS NULL
                          ORDER BY cm.created_at DESC, cm.id DESC LIMIT 5) c),
    'commentsTotal', (SELECT count(*) FROM comments cm WHERE cm.org_id = p_org_id AND cm.issue_id = p_issue_id AND cm.retracted_at IS NULL),
    'attachments', (SELECT coalesce(json_agg(json_build_object('id', a.id, 'urlEnc', a.url_enc, 'titleEnc', a.title_enc,
                                                             'contentType', a.content_type, 'size', a.size_bytes)
                                           ORDER BY a.created_at DESC, a.id DESC), '[]')
                      FROM (SELECT at.id, at.url_enc, at.title_enc, at.created_at, f.content_type, f.size_bytes
                              FROM attachments at LEFT JOIN attachment_files f ON f.attachment_id = at.id
                             WHERE at.org_id = p_org_id AND at.issue_id = p_issue_id AND at.obsoleted_at IS NULL
                             ORDER BY at.created_at DESC, at.id DESC LIMIT 5) a),
    'attachmentsTotal', (SELECT count(*) FROM attachments at WHERE at.org_id = p_org_id AND at.issue_id = p_issue_id AND at.obsoleted_at IS NULL))`,
  },
  // ── retasc_session_claims (0070_org_keyed_statements) ──
  {
    name: "session_claims: the session's other live claims",
    source: sessionClaims,
    sql: `SELECT coalesce(jsonb_agg(i.identifier ORDER BY l.claimed_at), '[]')
    FROM leases l JOIN issues i ON i.org_id = p_org_id AND i.id = l.issue_id AND i.lease_id = l.id
   WHERE l.org_id = p_org_id AND l.session_id = p_session_id AND l.key_id = p_key_id AND l.ended_at IS NULL
     AND i.lease_expires_at > p_now AND i.id IS DISTINCT FROM p_except`,
  },
  // ── retasc_next_wave (0064_picks_read_lease_check) ──
  {
    name: "next_wave: org-wide",
    source: nextWave,
    sql: `SELECT i.identifier FROM (
        (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM issues i
          WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
            AND ${dispatchable} AND i.lease_check_at IS NULL
            AND ${lanes}
          ${orderBy}
          LIMIT 5)
        UNION ALL
        (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number, i.submitter_id, i.assignee_id FROM issues i
          WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
            AND ${dispatchable} AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now OFFSET 0) i
          WHERE ${lanes}
          ${orderBy}
          LIMIT 5)) i`,
  },
  {
    name: "next_wave: a project key",
    wide: projectIndexes,
    source: nextWave,
    sql: `SELECT i.identifier FROM (
        (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM issues i
          WHERE i.project_id = p_project_id
            AND ${dispatchable} AND i.lease_check_at IS NULL
            AND ${lanes}
          ${orderBy}
          LIMIT 5)
        UNION ALL
        (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number, i.submitter_id, i.assignee_id FROM issues i
          WHERE i.org_id = p_org_id AND i.project_id = p_project_id
            AND ${dispatchable} AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now OFFSET 0) i
          WHERE ${lanes}
          ${orderBy}
          LIMIT 5)) i`,
  },
  // ── retasc_empty_poll (0070_org_keyed_statements) ──
  {
    name: "empty_poll: other lanes, org-wide",
    source: emptyPoll,
    sql: `SELECT (SELECT count(*) FROM (SELECT FROM issues i
               WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
                 AND ${dispatchable} AND i.lease_check_at IS NULL
                 AND p_user_id IS NOT NULL AND i.assignee_id IS NOT NULL AND i.assignee_id <> p_user_id
                 AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
               ${orderBy}) c)
           + (SELECT count(*) FROM issues i
               WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
                 AND ${dispatchable} AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now
                 AND p_user_id IS NOT NULL AND i.assignee_id IS NOT NULL AND i.assignee_id <> p_user_id
                 AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id)))`,
  },
  {
    name: "empty_poll: other lanes, a project key",
    wide: projectIndexes,
    source: emptyPoll,
    sql: `SELECT (SELECT count(*) FROM (SELECT FROM issues i
               WHERE i.project_id = p_project_id
                 AND ${dispatchable} AND i.lease_check_at IS NULL
                 AND p_user_id IS NOT NULL AND i.assignee_id IS NOT NULL AND i.assignee_id <> p_user_id
                 AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
               ${orderBy}) c)
           + (SELECT count(*) FROM issues i
               WHERE i.org_id = p_org_id AND i.project_id = p_project_id
                 AND ${dispatchable} AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now
                 AND p_user_id IS NOT NULL AND i.assignee_id IS NOT NULL AND i.assignee_id <> p_user_id
                 AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id)))`,
  },
  {
    name: "empty_poll: awaiting triage",
    source: emptyPoll,
    sql: `SELECT count(*) FROM issues i
   WHERE i.org_id = p_org_id AND (p_project_id IS NULL OR i.project_id = p_project_id)
     AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
     AND i.triage = 'pending' AND i.status IN ('todo', 'doing', 'blocked', 'review')`,
  },
  {
    name: "empty_poll: awaiting verification",
    wide: verificationIndex,
    source: emptyPoll,
    sql: `SELECT (array_agg(DISTINCT b.identifier ORDER BY b.identifier))[1:5] FROM issues b
    JOIN relations r ON r.org_id = p_org_id AND r.source_id = b.id AND r.type = 'blocks'
    JOIN issues i ON i.id = r.target_id
   WHERE b.verification = 'pending' AND b.status = 'done'
     AND i.org_id = p_org_id AND (p_project_id IS NULL OR i.project_id = p_project_id)
     AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
     AND i.open_blocker_count > 0 AND i.status IN ('todo', 'doing', 'blocked', 'review')`,
  },
  {
    name: "empty_poll: the next lapse",
    source: emptyPoll,
    sql: `SELECT i.lease_check_at FROM issues i
   WHERE i.org_id = p_org_id
     AND ${dispatchable} AND i.lease_check_at > p_now
   ORDER BY i.lease_check_at LIMIT 1`,
  },
  // ── retasc_finish (0070_org_keyed_statements) ──
  {
    name: "finish: the issue and whether it has edges",
    source: finish,
    sql: `SELECT EXISTS (SELECT 1 FROM relations r WHERE r.org_id = p_org_id AND r.type = 'blocks' AND (r.source_id = i.id OR r.target_id = i.id))
    FROM issues i WHERE i.org_id = p_org_id AND i.identifier = p_identifier`,
  },
  { name: "finish: the issue locked", source: finish, sql: `SELECT * FROM issues WHERE org_id = p_org_id AND identifier = p_identifier FOR UPDATE` },
  {
    name: "finish: an edge added meanwhile",
    source: finish,
    sql: `SELECT EXISTS (SELECT 1 FROM relations r WHERE r.org_id = p_org_id AND r.type = 'blocks' AND (r.source_id = v_row.id OR r.target_id = v_row.id))`,
  },
  {
    name: "finish: the lease ended",
    source: finish,
    sql: `UPDATE leases SET ended_at = p_now, end_reason = 'finished' WHERE org_id = p_org_id AND id = v_row.lease_id AND ended_at IS NULL`,
  },
  {
    name: "finish: the issue done",
    source: finish,
    sql: `UPDATE issues
     SET status = 'done', updated_at = p_now, own_level = v_level, effective_level = v_level, effective_due_at = NULL,
         sla_state = 'none', sla_next_at = NULL, lease_id = NULL, lease_token_hash = NULL, lease_expires_at = NULL
   WHERE org_id = p_org_id AND id = v_row.id
  RETURNING *`,
  },
  {
    name: "finish: what it blocked unblocked by one",
    source: finish,
    sql: `UPDATE issues SET open_blocker_count = open_blocker_count - 1
     WHERE org_id = p_org_id AND id IN (SELECT target_id FROM relations WHERE org_id = p_org_id AND source_id = v_row.id AND type = 'blocks')`,
  },
  {
    name: "finish: the activity",
    source: finish,
    sql: `INSERT INTO activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
  VALUES (p_org_id, v_row.id, 'finished', p_user_id, p_key_id, p_runtime,
          jsonb_build_object('from', v_from, 'to', 'done', 'fence', v_row.fence), p_now)`,
  },
  // ── retasc_charge (0058) ──
  {
    name: "charge: the month's spend",
    source: charge,
    sql: `SELECT coalesce(sum(s.month_spent), 0) FROM billing_credit_slices s
                                          WHERE s.org_id = p_org_id AND s.month_start = v_month`,
  },
  {
    name: "charge: the slice this transaction holds",
    source: charge,
    sql: `SELECT s.slice FROM billing_credit_slices s
     WHERE s.org_id = p_org_id AND s.slice = split_part(v_held, ':', 2)::integer AND s.given_remaining + s.bought_remaining >= p_amount
       FOR UPDATE`,
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
    name: "charge: the slice paid from",
    source: charge,
    sql: `UPDATE billing_credit_slices
       SET given_remaining = given_remaining - least(given_remaining, p_amount),
           bought_remaining = bought_remaining - (p_amount - least(given_remaining, p_amount)),
           month_spent = CASE WHEN month_start = v_month THEN month_spent + p_amount ELSE p_amount END,
           month_start = v_month
     WHERE org_id = p_org_id AND slice = v_slice`,
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
  // ── heartbeat by its token (server/queue/heartbeat-held.ts, decision 072) ──
  {
    name: "heartbeat: renew the issue and the lease, log it",
    source: "server/queue/heartbeat-held.ts",
    sql: `with renewed as (
            update issues set lease_expires_at = v_expires::timestamptz
             where org_id = p_org_id and identifier = retasc_identifier(p_org_id, p_identifier) and lease_id is not null
               and lease_expires_at > p_now::timestamptz and lease_token_hash = p_token_hash
            returning id, identifier, fence, lease_id
          ), lease as (
            update leases set expires_at = v_expires::timestamptz, heartbeat_at = p_now::timestamptz, renewed_by = 'heartbeat'
             where org_id = p_org_id and id = (select lease_id from renewed)
          ), logged as (
            insert into activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
            select p_org_id, id, 'heartbeat', p_user_id, p_key_id, p_runtime, jsonb_build_object('fence', fence), p_now::timestamptz
              from renewed
          )
          select id, identifier, fence from renewed`,
  },
];
