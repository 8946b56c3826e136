/** The hot statements of a lease: taken, lapsed, abandoned, listed by session, renewed and finished. */
import { abandonedClaim, finish, recordExpiry, sessionClaims, takeLease, type HotStatement } from "./functions.ts";

export const leaseStatements: HotStatement[] = [
  // ── retasc_take_lease (0085_view_extras; its statements as in 0070) ──
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
  // ── retasc_session_claims (0070_org_keyed_statements) ──
  {
    name: "session_claims: the session's other live claims",
    source: sessionClaims,
    sql: `SELECT coalesce(jsonb_agg(i.identifier ORDER BY l.claimed_at), '[]')
    FROM leases l JOIN issues i ON i.org_id = p_org_id AND i.id = l.issue_id AND i.lease_id = l.id
   WHERE l.org_id = p_org_id AND l.session_id = p_session_id AND l.key_id = p_key_id AND l.ended_at IS NULL
     AND i.lease_expires_at > p_now AND i.id IS DISTINCT FROM p_except`,
  },
  // ── heartbeat by its token (server/queue/heartbeat-held.ts, its last/extended/logged from beat-log.ts's beatSteps; decisions 072 and 105) ──
  {
    name: "heartbeat: renew the issue and the lease, log it (a run of beats kept in one row)",
    source: "server/queue/heartbeat-held.ts",
    sql: `with renewed as (
            update issues set lease_expires_at = v_expires::timestamptz
             where org_id = p_org_id and identifier = retasc_identifier(p_org_id, p_identifier) and lease_id is not null
               and lease_expires_at > p_now::timestamptz and lease_token_hash = p_token_hash
            returning id, identifier, fence, lease_id
          ), lease as (
            update leases set expires_at = v_expires::timestamptz, check_at = retasc_renewed_check_at(check_at, v_expires::timestamptz),
                   heartbeat_at = p_now::timestamptz, renewed_by = 'heartbeat'
             where org_id = p_org_id and id = (select lease_id from renewed)
          ), last as (
            select id, kind, actor_id, key_id, runtime, detail_enc, facts from activity
             where org_id = p_org_id and issue_id = (select id from renewed)
             order by id desc limit 1
          ), extended as (
            update activity a set facts = jsonb_build_object('fence', l.facts->'fence', 'beats', coalesce((l.facts->>'beats')::int, 1) + 1, 'lastAt', p_now::text)
              from last l
             where a.org_id = p_org_id and a.id = l.id and l.kind = 'heartbeat' and l.detail_enc is null
               and l.facts->'fence' = (select to_jsonb(fence) from renewed) and l.actor_id is not distinct from p_user_id
               and l.key_id is not distinct from p_key_id and l.runtime is not distinct from p_runtime
            returning a.id
          ), logged as (
            insert into activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
            select p_org_id, id, 'heartbeat', p_user_id, p_key_id, p_runtime, jsonb_build_object('fence', fence), p_now::timestamptz
              from renewed where not exists (select 1 from extended)
          )
          select id, identifier, fence from renewed`,
  },
  // ── retasc_finish (0087_claim_and_finish_read_less; its other statements as in 0075) ──
  {
    name: "finish: the issue and whether it has edges",
    source: finish,
    sql: `SELECT (i.view_extras & 1) <> 0
         AND EXISTS (SELECT 1 FROM relations r WHERE r.org_id = p_org_id AND r.type = 'blocks' AND (r.source_id = i.id OR r.target_id = i.id))
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
  {
    name: "finish: the done event",
    source: finish,
    sql: `INSERT INTO outbox (job, payload, org_id)
    VALUES ('notify.issue_event', jsonb_build_object('orgId', p_org_id, 'issueId', v_row.id, 'kind', 'done', 'actorId', p_user_id), p_org_id)`,
  },
];
