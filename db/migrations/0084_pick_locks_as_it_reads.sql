-- Issue 30: a pick locks as it reads. The pick (0048, decision 076) read the top candidate
-- unlocked, then locked it FOR NO KEY UPDATE SKIP LOCKED if still dispatchable, and on a row
-- another claim held, read again without it: under concurrent batches of claims that was four
-- to five reads and lock attempts a claim (bench/claim-cpu.ts: 10,792 picks for 2,160 claims).
-- When no lapsed lease is within reach (the common case: the reclaim sweep clears them), the
-- top unleased candidate is now read and locked in one statement, SKIP LOCKED stepping over rows
-- other claims hold, as the old single read did before 0048. The order is the same: a row
-- another transaction holds was passed over before too. Lapsed rows in reach, a key at its cap
-- (which must answer `cap` without locking) or nothing found this way take the previous loop,
-- which also counts the rows it passed over for the empty reply. Everything else is as in 0070.
CREATE OR REPLACE FUNCTION retasc_next_issue(p_org_id text, p_project_id text, p_all_lanes boolean, p_check_sla boolean, p_cap integer, p_user_id text, p_key_id text, p_runtime text, p_now timestamp with time zone, p_lease_id text, p_token_hash text, p_ttl_ms bigint, p_charge jsonb, p_session_id text, p_project_ids text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  v_live integer := 0;
  v_id text;
  v_sla_due boolean;
  v_foreign boolean;
  v_billing text;
  -- Rows another transaction held locked when this pick reached them: passed over, as SKIP LOCKED would.
  v_passed text[] := '{}';
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
    v_live := retasc_key_budget(p_key_id, p_now, p_org_id);
  END IF;
  -- The common case, no lapsed lease in reach: the pick locks as it reads (SKIP LOCKED on the
  -- unleased index), stepping over rows other claims hold in one statement.
  IF v_live < p_cap AND NOT EXISTS (SELECT 1 FROM issues i
       WHERE i.org_id = p_org_id AND (p_project_id IS NULL OR i.project_id = p_project_id)
         AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
         AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending'
         AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now) THEN
    IF p_project_id IS NULL THEN
      SELECT i.id INTO v_id FROM issues i
       WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
         AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at IS NULL
         AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= p_now)
         AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
         AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
       ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
       LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED;
    ELSE
      SELECT i.id INTO v_id FROM issues i
       WHERE i.project_id = p_project_id
         AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at IS NULL
         AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= p_now)
         AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
         AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
       ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
       LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED;
    END IF;
  END IF;
  IF v_id IS NULL THEN LOOP
    IF p_project_id IS NULL THEN
      SELECT i.id INTO v_id FROM (
        (SELECT i.id, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM issues i
          WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at IS NULL
            AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
            AND i.id <> ALL(v_passed)
          ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
          LIMIT 1)
        UNION ALL
        -- OFFSET 0 keeps this a scan of the lapsed rows by expiry (issues_lease_check_idx), sorted, rather than a walk of an ordered index.
        (SELECT i.id, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM (SELECT i.id, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number, i.submitter_id, i.assignee_id FROM issues i
          WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now OFFSET 0) i
          WHERE (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
            AND i.id <> ALL(v_passed)
          ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
          LIMIT 1)) i
       ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
       LIMIT 1;
    ELSE
      SELECT i.id INTO v_id FROM (
        (SELECT i.id, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM issues i
          WHERE i.project_id = p_project_id
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at IS NULL
            AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
            AND i.id <> ALL(v_passed)
          ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
          LIMIT 1)
        UNION ALL
        -- OFFSET 0 keeps this a scan of the lapsed rows by expiry (issues_lease_check_idx), sorted, rather than a walk of an ordered index.
        (SELECT i.id, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM (SELECT i.id, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number, i.submitter_id, i.assignee_id FROM issues i
          WHERE i.org_id = p_org_id AND i.project_id = p_project_id
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now OFFSET 0) i
          WHERE (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
            AND i.id <> ALL(v_passed)
          ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
          LIMIT 1)) i
       ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
       LIMIT 1;
    END IF;
    IF v_id IS NULL THEN
      RETURN jsonb_build_object('outcome', 'empty') || retasc_empty_poll(p_org_id, p_project_id, p_project_ids, p_user_id, p_all_lanes, p_now,
                                                                         cardinality(v_passed));
    END IF;
    -- At its cap, the key is refused before anything is locked: a lock would hide this row from every other pick.
    IF v_live >= p_cap THEN
      RETURN jsonb_build_object('outcome', 'cap');
    END IF;
    -- Locked only if still dispatchable in the caller's lanes; a row being claimed meanwhile is passed over.
    PERFORM 1 FROM issues i
     WHERE i.org_id = p_org_id AND i.id = v_id
       AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending'
       AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= p_now)
       AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
       AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
       FOR NO KEY UPDATE SKIP LOCKED;
    EXIT WHEN FOUND;
    v_passed := v_passed || v_id;
  END LOOP; END IF;
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
$function$;
