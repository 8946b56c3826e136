ALTER TABLE "projects" ADD COLUMN "quarantine_after" integer DEFAULT 3 NOT NULL;--> statement-breakpoint
ALTER TABLE "issues" ADD COLUMN "abandoned_claims" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "issues" ADD COLUMN "abandoned_fence" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "issues" ADD COLUMN "quarantined_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "issues" ADD COLUMN "quarantine_reason" text;--> statement-breakpoint

-- Quarantine (decision 055). The one home of the rule: every claim that ends abandoned (its
-- lease lapsed, recorded by the sweep or by the next claim through retasc_record_expiry; or
-- released by its holder, from server/queue/lease.ts) is passed here, once, with the issue's
-- row locked by the caller. A claim under which a checkpoint was written made progress and
-- ends the run; a claim counts once (by its fence, however many times its end is seen) and
-- continues the run only when it follows the last one counted (any claim between, finished,
-- taken back by a person or checkpointed, starts it again). When the run reaches the project's
-- quarantine_after, the issue goes to blocked with the reason, recorded and notified, and no
-- dispatch takes it until a person releases it (server/queue/quarantine.ts). Returns whether
-- this end quarantined it.
CREATE FUNCTION retasc_abandoned_claim(p_issue_id text, p_lease_id text, p_org_id text, p_now timestamptz)
RETURNS boolean LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
  v_lease leases;
  v_issue issues;
  v_after integer;
  v_count integer;
  v_reason text;
BEGIN
  SELECT * INTO v_lease FROM leases WHERE id = p_lease_id;
  SELECT * INTO v_issue FROM issues WHERE id = p_issue_id;
  IF v_lease.id IS NULL OR v_issue.id IS NULL OR v_issue.abandoned_fence >= v_lease.fence THEN
    RETURN false;
  END IF;
  IF EXISTS (SELECT 1 FROM checkpoints c WHERE c.issue_id = p_issue_id AND c.lease_id = p_lease_id) THEN
    UPDATE issues SET abandoned_claims = 0, abandoned_fence = v_lease.fence WHERE id = p_issue_id;
    RETURN false;
  END IF;
  v_count := CASE WHEN v_issue.abandoned_fence = v_lease.fence - 1 THEN v_issue.abandoned_claims + 1 ELSE 1 END;
  SELECT quarantine_after INTO v_after FROM projects WHERE id = v_issue.project_id;
  IF v_count < v_after OR v_issue.status NOT IN ('todo', 'doing', 'review') OR v_issue.quarantined_at IS NOT NULL THEN
    UPDATE issues SET abandoned_claims = v_count, abandoned_fence = v_lease.fence WHERE id = p_issue_id;
    RETURN false;
  END IF;
  v_reason := format('quarantined after %s abandoned claims', v_count);
  UPDATE issues
     SET abandoned_claims = v_count, abandoned_fence = v_lease.fence, status = 'blocked',
         quarantined_at = p_now, quarantine_reason = v_reason, updated_at = p_now
   WHERE id = p_issue_id;
  INSERT INTO activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
  VALUES (p_org_id, p_issue_id, 'quarantined', NULL, NULL, 'retasc',
          jsonb_build_object('from', v_issue.status, 'to', 'blocked', 'claims', v_count, 'fence', v_lease.fence, 'reason', v_reason),
          p_now);
  INSERT INTO outbox (job, payload, org_id)
  VALUES ('notify.issue_event', jsonb_build_object('orgId', p_org_id, 'issueId', p_issue_id, 'kind', 'issue_quarantined', 'actorId', NULL), p_org_id);
  RETURN true;
END
$$;
--> statement-breakpoint

-- 0006's, and the ended claim is passed to retasc_abandoned_claim.
CREATE OR REPLACE FUNCTION retasc_record_expiry(p_lease_id text, p_issue_id text, p_org_id text, p_now timestamptz, p_by text)
RETURNS boolean LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
  v_lease leases;
BEGIN
  UPDATE leases SET ended_at = p_now, end_reason = 'expired', reclaim_recorded_at = p_now
   WHERE id = p_lease_id AND ended_at IS NULL
  RETURNING * INTO v_lease;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  INSERT INTO activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
  VALUES (p_org_id, p_issue_id, 'reclaimed', NULL, NULL, 'retasc',
          jsonb_build_object('fence', v_lease.fence, 'runtime', v_lease.runtime, 'userId', v_lease.user_id,
                             'expiredAt', retasc_iso(v_lease.expires_at), 'by', p_by),
          p_now);
  INSERT INTO outbox (job, payload, org_id)
  VALUES ('notify.issue_event', jsonb_build_object('orgId', p_org_id, 'issueId', p_issue_id, 'kind', 'reclaimed', 'actorId', NULL), p_org_id);
  PERFORM retasc_abandoned_claim(p_issue_id, p_lease_id, p_org_id, p_now);
  RETURN true;
END
$$;
--> statement-breakpoint

-- 0026's, but a claim whose recorded lapse quarantined the issue returns {quarantined: true}
-- and takes no lease (next_issue picks again; claim_issue says so).
CREATE OR REPLACE FUNCTION retasc_take_lease(p_issue_id text, p_org_id text, p_user_id text, p_key_id text, p_runtime text,
                                  p_now timestamptz, p_lease_id text, p_token_hash text, p_ttl_ms bigint, p_session_id text)
RETURNS jsonb LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
  v_row issues;
  v_now timestamptz;
  v_fence integer;
  v_expires timestamptz;
  v_review boolean;
  v_notices jsonb := '[]';
BEGIN
  SELECT * INTO v_row FROM issues WHERE id = p_issue_id;
  IF v_row.lease_id IS NOT NULL AND retasc_record_expiry(v_row.lease_id, v_row.id, p_org_id, p_now, 'claim') THEN
    v_notices := jsonb_build_array(jsonb_build_object('channel', 'retasc_outbox', 'payload', ''));
    -- The lapse this claim found quarantined the issue (retasc_abandoned_claim): it takes nothing.
    IF EXISTS (SELECT 1 FROM issues WHERE id = p_issue_id AND quarantined_at IS NOT NULL) THEN
      UPDATE issues SET lease_id = NULL, lease_token_hash = NULL, lease_expires_at = NULL WHERE id = p_issue_id;
      RETURN jsonb_build_object('quarantined', true, 'identifier', v_row.identifier, 'notices', v_notices);
    END IF;
  END IF;
  -- Never before the previous lease ended, whatever the callers' clocks: the leases of one
  -- issue never overlap.
  v_now := p_now;
  IF v_row.fence > 0 THEN
    SELECT greatest(p_now, l.ended_at) INTO v_now FROM leases l WHERE l.issue_id = p_issue_id AND l.fence = v_row.fence;
  END IF;
  v_fence := v_row.fence + 1;
  v_expires := v_now + p_ttl_ms * interval '1 millisecond';
  v_review := v_row.status = 'review';
  INSERT INTO leases (id, org_id, issue_id, fence, key_id, user_id, runtime, claimed_at, heartbeat_at, expires_at, session_id, token_hash)
  VALUES (p_lease_id, p_org_id, p_issue_id, v_fence, p_key_id, coalesce(p_user_id, 'system'), coalesce(p_runtime, 'unknown'),
          v_now, v_now, v_expires, p_session_id, p_token_hash);
  UPDATE issues
     SET fence = v_fence, lease_id = p_lease_id, lease_token_hash = p_token_hash, lease_expires_at = v_expires,
         status = CASE WHEN v_review THEN 'review' ELSE 'doing' END,
         first_claimed_at = coalesce(first_claimed_at, v_now), updated_at = v_now
   WHERE id = p_issue_id
  RETURNING * INTO v_row;
  INSERT INTO activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
  VALUES (p_org_id, p_issue_id, 'claimed', p_user_id, p_key_id, p_runtime,
          jsonb_build_object('fence', v_fence, 'expiresAt', retasc_iso(v_expires), 'review', v_review), v_now);
  v_notices := v_notices || jsonb_build_object('channel', 'retasc_events',
    'payload', json_build_object('orgId', p_org_id, 'kind', 'claim.taken', 'issueId', p_issue_id,
                                 'identifier', v_row.identifier, 'fence', v_fence)::text);
  RETURN jsonb_build_object('issue', to_jsonb(v_row), 'reads', retasc_view_reads(p_issue_id, v_now), 'now', retasc_iso(v_now),
                            'discussion', retasc_claim_discussion(p_issue_id), 'notices', v_notices);
END
$$;

