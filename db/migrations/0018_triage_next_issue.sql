-- Outsiders' issues awaiting triage are not dispatched (db/schema/dispatch.ts dispatchCandidate): retasc_next_issue's two picks
-- gain the rule's new term; the rest of the function is 0010's.
CREATE OR REPLACE FUNCTION retasc_next_issue(p_org_id text, p_project_id text, p_all_lanes boolean, p_check_sla boolean, p_cap integer,
                                  p_user_id text, p_key_id text, p_runtime text, p_now timestamptz,
                                  p_lease_id text, p_token_hash text, p_ttl_ms bigint, p_charge jsonb)
RETURNS jsonb LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
  v_live integer := 0;
  v_id text;
  v_sla_due boolean;
  v_foreign boolean;
  v_billing text;
BEGIN
  IF p_project_id IS NULL THEN
    v_sla_due := p_check_sla AND EXISTS (SELECT 1 FROM issues i WHERE i.org_id = p_org_id AND i.sla_next_at <= p_now);
  ELSE
    -- A project key's statements below name no org: a generic plan given both could settle on
    -- the org-wide queue index and walk the whole org. The key's project is in its org, checked here.
    SELECT p.id IS NULL, p_check_sla AND EXISTS (SELECT 1 FROM issues i WHERE i.project_id = p_project_id AND i.sla_next_at <= p_now)
      INTO v_foreign, v_sla_due
      FROM (SELECT 1) AS one LEFT JOIN projects p ON p.id = p_project_id AND p.org_id = p_org_id;
    IF v_foreign THEN
      RETURN jsonb_build_object('outcome', 'empty');
    END IF;
  END IF;
  IF v_sla_due THEN
    RETURN jsonb_build_object('outcome', 'sla');
  END IF;
  IF p_key_id IS NOT NULL THEN
    v_live := retasc_key_budget(p_key_id, p_now);
  END IF;
  IF p_project_id IS NULL THEN
    SELECT i.id INTO v_id FROM issues i
     WHERE i.org_id = p_org_id
       AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending'
       AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= p_now)
       AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
       AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
     ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
     LIMIT 1
     FOR UPDATE SKIP LOCKED;
  ELSE
    SELECT i.id INTO v_id FROM issues i
     WHERE i.project_id = p_project_id
       AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending'
       AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= p_now)
       AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
       AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
     ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
     LIMIT 1
     FOR UPDATE SKIP LOCKED;
  END IF;
  IF v_id IS NULL THEN
    RETURN jsonb_build_object('outcome', 'empty');
  END IF;
  IF v_live >= p_cap THEN
    RETURN jsonb_build_object('outcome', 'cap');
  END IF;
  -- Billing on: the claim pays before it writes (a refusal returns the code, writing nothing).
  IF p_charge IS NOT NULL THEN
    v_billing := retasc_charge(p_org_id, p_user_id, p_key_id, p_runtime, p_charge->>'tool', p_charge->>'tier',
                               (p_charge->>'microCredits')::bigint, v_id, true, p_now);
    IF v_billing IN ('BILLING_INACTIVE', 'SPEND_CAP') THEN
      RETURN jsonb_build_object('outcome', 'billing', 'code', v_billing);
    END IF;
  END IF;
  RETURN retasc_take_lease(v_id, p_org_id, p_user_id, p_key_id, p_runtime, p_now, p_lease_id, p_token_hash, p_ttl_ms)
         || jsonb_build_object('outcome', 'claimed', 'otherClaims', v_live);
END
$$;
