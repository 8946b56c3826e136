-- What next_issue answers beside its claim, in the claim's own statement (decision 080): `wave`,
-- up to five other ready issues of the caller's lanes in dispatch order, read and never locked or
-- reserved (the same two halves the pick reads, decision 076: unleased candidates on the claimable
-- indexes, lapsed leases by expiry), and `activeClaims`, the live claims of the caller's MCP session
-- besides the one just taken, read only when its key holds others (or nothing was claimable).
CREATE FUNCTION retasc_next_wave(p_org_id text, p_project_id text, p_project_ids text[], p_user_id text, p_all_lanes boolean,
                                 p_now timestamptz)
RETURNS jsonb LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
  v_wave jsonb;
BEGIN
  -- Two shapes, as the pick's (0048): a project key's reads name no org, so a generic plan cannot
  -- settle on the org-wide index and walk the whole org.
  IF p_project_id IS NULL THEN
    SELECT jsonb_agg(jsonb_build_object('identifier', i.identifier, 'titleEnc', i.title_enc, 'priority', i.priority, 'effectiveLevel', i.effective_level)
                     ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC)
      INTO v_wave FROM (SELECT * FROM (
        (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM issues i
          WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_expires_at IS NULL
            AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
          ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
          LIMIT 5)
        UNION ALL
        (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number, i.submitter_id, i.assignee_id FROM issues i
          WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_expires_at <= p_now OFFSET 0) i
          WHERE (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
          ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
          LIMIT 5)) i
       ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
       LIMIT 5) i;
  ELSE
    SELECT jsonb_agg(jsonb_build_object('identifier', i.identifier, 'titleEnc', i.title_enc, 'priority', i.priority, 'effectiveLevel', i.effective_level)
                     ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC)
      INTO v_wave FROM (SELECT * FROM (
        (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM issues i
          WHERE i.project_id = p_project_id
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_expires_at IS NULL
            AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
          ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
          LIMIT 5)
        UNION ALL
        (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number, i.submitter_id, i.assignee_id FROM issues i
          WHERE i.org_id = p_org_id AND i.project_id = p_project_id
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_expires_at <= p_now OFFSET 0) i
          WHERE (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
          ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
          LIMIT 5)) i
       ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
       LIMIT 5) i;
  END IF;
  RETURN coalesce(v_wave, '[]');
END
$$;
--> statement-breakpoint

-- The live claims a session holds (leases_session_live_idx), oldest first, but one.
CREATE FUNCTION retasc_session_claims(p_session_id text, p_key_id text, p_now timestamptz, p_except text)
RETURNS jsonb LANGUAGE sql STABLE
AS $$
  SELECT coalesce(jsonb_agg(i.identifier ORDER BY l.claimed_at), '[]')
    FROM leases l JOIN issues i ON i.id = l.issue_id AND i.lease_id = l.id
   WHERE l.session_id = p_session_id AND l.key_id = p_key_id AND l.ended_at IS NULL
     AND i.lease_expires_at > p_now AND i.id IS DISTINCT FROM p_except
$$;
--> statement-breakpoint

-- 0034's, each claim followed by its wave and the session's other claims; an empty answer by the
-- session's claims. A client with no session is told of none (decision 036: never a sibling's).
CREATE OR REPLACE FUNCTION retasc_next_issues(p_calls jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_index integer;
  v_call jsonb;
  v_result jsonb;
  v_project_ids text[];
  -- An array variable grows in place; appending to a jsonb value would copy it every call.
  v_results jsonb[] := '{}';
BEGIN
  FOR v_index, v_call IN
    SELECT (t.ord - 1)::integer, t.call FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t(call, ord)
     ORDER BY t.call->>'keyId' NULLS FIRST, t.ord
  LOOP
    v_project_ids := CASE WHEN jsonb_typeof(v_call->'projectIds') = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(v_call->'projectIds')) END;
    v_result := retasc_next_issue(
      v_call->>'orgId', v_call->>'projectId', (v_call->>'allLanes')::boolean, (v_call->>'checkSla')::boolean,
      (v_call->>'cap')::integer, v_call->>'userId', v_call->>'keyId', v_call->>'runtime', (v_call->>'now')::timestamptz,
      v_call->>'leaseId', v_call->>'tokenHash', (v_call->>'ttlMs')::bigint, v_call->'charge', v_call->>'sessionId', v_project_ids);
    IF v_result->>'outcome' = 'claimed' AND NOT v_result ? 'quarantined' THEN
      v_result := v_result || jsonb_build_object(
        'wave', retasc_next_wave(v_call->>'orgId', v_call->>'projectId', v_project_ids, v_call->>'userId', (v_call->>'allLanes')::boolean,
                                 (v_call->>'now')::timestamptz),
        'activeClaims', CASE WHEN (v_result->>'otherClaims')::integer > 0 AND v_call->>'sessionId' IS NOT NULL
                             THEN retasc_session_claims(v_call->>'sessionId', v_call->>'keyId', (v_call->>'now')::timestamptz, v_result->'issue'->>'id')
                             ELSE '[]' END);
    ELSIF v_result->>'outcome' = 'empty' THEN
      v_result := v_result || jsonb_build_object('activeClaims', CASE WHEN v_call->>'sessionId' IS NOT NULL
        THEN retasc_session_claims(v_call->>'sessionId', v_call->>'keyId', (v_call->>'now')::timestamptz, NULL) ELSE '[]' END);
    END IF;
    v_results := array_append(v_results, jsonb_build_object('index', v_index) || v_result);
  END LOOP;
  RETURN to_jsonb(v_results);
END
$$;
