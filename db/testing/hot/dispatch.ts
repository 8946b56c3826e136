/** The hot statements of the pick: next_issue, the key's budget, next_wave and the empty poll. */
import { emptyPoll, keyBudget, nextIssue, nextWave, type HotStatement } from "./functions.ts";

const projectIndexes =
  "a project key's statement names no org: the indexes it reads (issues_unleased_idx, issues_sla_next_idx) lead with project_id, and naming " +
  "the org beside them turns the generic plan to issues_org_open_idx (org_id, project_id) and a sort of the project's open issues. It names " +
  "the org once those indexes lead with (org_id, project_id), built concurrently (decision 099)";
const verificationIndex =
  "the pending finishes are read through issues_verification_pending_idx, which has no org_id: naming the org turns the plan to " +
  "an index led by the org and every done issue of the org. It names the org once that index leads with org_id (decision 099)";

const orderBy = `ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC`;
const dispatchable = `i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending'`;
const lanes = `(p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)`;

/** The pick that locks as it reads (0084), for a scope: the unleased half with no live lease, locked as the walk reaches it. */
const lockedRead = (scope: string) => `SELECT i.id FROM issues i
       WHERE ${scope}
         AND ${dispatchable} AND i.lease_check_at IS NULL
         AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= p_now)
         AND ${lanes}
       ${orderBy}
       LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED`;

/** Whether a lapsed lease is within the caller's reach, in any lane (0084's pick and 0086's wave ask it). */
const lapsedInReach = `SELECT 1 FROM issues i
       WHERE i.org_id = p_org_id AND (p_project_id IS NULL OR i.project_id = p_project_id)
         AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
         AND ${dispatchable}
         AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now`;

/** The wave's unleased half alone (0086), for a scope: five in the dispatch order. */
const unleasedFive = (scope: string) => `SELECT i.identifier FROM issues i
          WHERE ${scope}
            AND ${dispatchable} AND i.lease_check_at IS NULL
            AND ${lanes}
          ${orderBy}
          LIMIT 5`;

export const dispatchStatements: HotStatement[] = [
  // ── retasc_next_issue (0084_pick_locks_as_it_reads) ──
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
  { name: "next_issue: a lapsed lease within reach", source: nextIssue, sql: lapsedInReach },
  {
    name: "next_issue: the pick locked as read, org-wide",
    source: nextIssue,
    sql: lockedRead("i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))"),
  },
  {
    name: "next_issue: the pick locked as read, a project key",
    wide: projectIndexes,
    source: nextIssue,
    sql: lockedRead("i.project_id = p_project_id"),
  },
  // ── retasc_key_budget (0070_org_keyed_statements) ──
  {
    name: "key_budget: the key's live leases",
    source: keyBudget,
    sql: `SELECT count(*) FROM leases WHERE org_id = p_org_id AND key_id = p_key_id AND ended_at IS NULL AND expires_at > p_now`,
  },
  // ── retasc_next_wave (0086_wave_without_lapsed_half; both halves as in 0064) ──
  { name: "next_wave: a lapsed lease within reach", source: nextWave, sql: lapsedInReach },
  { name: "next_wave: the unleased half alone, org-wide", source: nextWave, sql: unleasedFive("i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))") },
  { name: "next_wave: the unleased half alone, a project key", wide: projectIndexes, source: nextWave, sql: unleasedFive("i.project_id = p_project_id") },
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
];
