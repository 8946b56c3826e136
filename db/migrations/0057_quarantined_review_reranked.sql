-- retasc_abandoned_claim as in 0039, but a review it quarantines leaves review (to blocked) with
-- its sla_next_at set to now: its own level still held the review's age floor, which no SQL
-- computes (decision 073). The next dispatch in its scope, or the SLA sweep within the minute,
-- re-ranks it from server/issues/levels.ts (no review clock once blocked) and what it gates with
-- it. The one rule stays in TypeScript.
CREATE OR REPLACE FUNCTION retasc_abandoned_claim(p_issue_id text, p_lease_id text, p_org_id text, p_now timestamptz)
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
         quarantined_at = p_now, quarantine_reason = v_reason, updated_at = p_now,
         sla_next_at = CASE WHEN v_issue.status = 'review' THEN p_now ELSE sla_next_at END
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
