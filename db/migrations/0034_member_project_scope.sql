ALTER TABLE "members" ADD COLUMN "project_ids" text[];--> statement-breakpoint
ALTER TABLE "invites" ADD COLUMN "project_ids" text[];--> statement-breakpoint
-- Project scoping (decision 042): next_issue hands a scoped member's agents only issues in their
-- projects. retasc_next_issue takes the scope (null: every project); retasc_next_issues reads it
-- from each call's projectIds.
DROP FUNCTION retasc_next_issue(text, text, boolean, boolean, integer, text, text, text, timestamptz, text, text, bigint, jsonb, text);
--> statement-breakpoint

CREATE FUNCTION retasc_next_issue(p_org_id text, p_project_id text, p_all_lanes boolean, p_check_sla boolean, p_cap integer,
                                  p_user_id text, p_key_id text, p_runtime text, p_now timestamptz,
                                  p_lease_id text, p_token_hash text, p_ttl_ms bigint, p_charge jsonb, p_session_id text,
                                  p_project_ids text[])
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
    v_sla_due := p_check_sla AND EXISTS (SELECT 1 FROM issues i WHERE i.org_id = p_org_id AND i.sla_next_at <= p_now
                                                   AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids)));
  ELSE
    -- A project key's statements below name no org: a generic plan given both could settle on
    -- the org-wide queue index and walk the whole org. The key's project is in its org, checked here.
    SELECT p.id IS NULL, p_check_sla AND EXISTS (SELECT 1 FROM issues i WHERE i.project_id = p_project_id AND i.sla_next_at <= p_now)
      INTO v_foreign, v_sla_due
      FROM (SELECT 1) AS one LEFT JOIN projects p ON p.id = p_project_id AND p.org_id = p_org_id;
    -- A project key of a member scoped elsewhere (decision 042) is handed nothing.
    IF v_foreign OR NOT (p_project_ids IS NULL OR p_project_id = ANY(p_project_ids)) THEN
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
       AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
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
  RETURN retasc_take_lease(v_id, p_org_id, p_user_id, p_key_id, p_runtime, p_now, p_lease_id, p_token_hash, p_ttl_ms, p_session_id)
         || jsonb_build_object('outcome', 'claimed', 'otherClaims', v_live);
END
$$;
--> statement-breakpoint

CREATE OR REPLACE FUNCTION retasc_next_issues(p_calls jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_index integer;
  v_call jsonb;
  -- An array variable grows in place; appending to a jsonb value would copy it every call.
  v_results jsonb[] := '{}';
BEGIN
  FOR v_index, v_call IN
    SELECT (t.ord - 1)::integer, t.call FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t(call, ord)
     ORDER BY t.call->>'keyId' NULLS FIRST, t.ord
  LOOP
    v_results := array_append(v_results, jsonb_build_object('index', v_index) || retasc_next_issue(
      v_call->>'orgId', v_call->>'projectId', (v_call->>'allLanes')::boolean, (v_call->>'checkSla')::boolean,
      (v_call->>'cap')::integer, v_call->>'userId', v_call->>'keyId', v_call->>'runtime', (v_call->>'now')::timestamptz,
      v_call->>'leaseId', v_call->>'tokenHash', (v_call->>'ttlMs')::bigint, v_call->'charge', v_call->>'sessionId',
      CASE WHEN jsonb_typeof(v_call->'projectIds') = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(v_call->'projectIds')) END));
  END LOOP;
  RETURN to_jsonb(v_results);
END
$$;
