-- The picks read lease_check_at where they read lease_expires_at, on the indexes that name it
-- (decision 097, migration 0062): unleased candidates are those with no lease_check_at, lapsed ones
-- are found by lease_check_at <= now and then the exact expiry. Otherwise as 0050, 0048 and 0052.
CREATE OR REPLACE FUNCTION retasc_next_issue(p_org_id text, p_project_id text, p_all_lanes boolean, p_check_sla boolean, p_cap integer,
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
    v_live := retasc_key_budget(p_key_id, p_now);
  END IF;
  LOOP
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
     WHERE i.id = v_id
       AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending'
       AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= p_now)
       AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
       AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
       FOR NO KEY UPDATE SKIP LOCKED;
    EXIT WHEN FOUND;
    v_passed := v_passed || v_id;
  END LOOP;
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

CREATE OR REPLACE FUNCTION retasc_empty_poll(p_org_id text, p_project_id text, p_project_ids text[], p_user_id text, p_all_lanes boolean,
                                  p_now timestamptz, p_ready integer)
RETURNS jsonb LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
AS $$
DECLARE
  v_other integer := 0;
  v_triage integer;
  v_verification text[];
  v_next_lapse timestamptz;
BEGIN
  -- Ready work in other people's lanes, which allLanes takes: unleased plus lapsed. The order (and
  -- enable_sort off) keeps the count on the claimable indexes, which hold no held row: a generic
  -- plan would otherwise read an index of open issues, held ones included.
  -- (Ready work in the caller's lanes is what the pick passed over as being claimed: p_ready.)
  IF p_user_id IS NOT NULL AND NOT p_all_lanes THEN
    IF p_project_id IS NULL THEN
      SELECT (SELECT count(*) FROM (SELECT FROM issues i
               WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
                 AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at IS NULL
                 AND p_user_id IS NOT NULL AND i.assignee_id IS NOT NULL AND i.assignee_id <> p_user_id
                 AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
               ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC) c)
           + (SELECT count(*) FROM issues i
               WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
                 AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now
                 AND p_user_id IS NOT NULL AND i.assignee_id IS NOT NULL AND i.assignee_id <> p_user_id
                 AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id)))
        INTO v_other;
    ELSE
      SELECT (SELECT count(*) FROM (SELECT FROM issues i
               WHERE i.project_id = p_project_id
                 AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at IS NULL
                 AND p_user_id IS NOT NULL AND i.assignee_id IS NOT NULL AND i.assignee_id <> p_user_id
                 AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
               ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC) c)
           + (SELECT count(*) FROM issues i
               WHERE i.org_id = p_org_id AND i.project_id = p_project_id
                 AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now
                 AND p_user_id IS NOT NULL AND i.assignee_id IS NOT NULL AND i.assignee_id <> p_user_id
                 AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id)))
        INTO v_other;
    END IF;
  END IF;
  -- Outsiders' open issues awaiting a person's triage (issues_triage_pending_idx).
  SELECT count(*) INTO v_triage FROM issues i
   WHERE i.org_id = p_org_id AND (p_project_id IS NULL OR i.project_id = p_project_id)
     AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
     AND i.triage = 'pending' AND i.status IN ('todo', 'doing', 'blocked', 'review');
  -- Finishes CI has not verified that hold open work in scope back (decision 045), at most five:
  -- read from the few pending ones (issues_verification_pending_idx), the scope checked on what they block.
  SELECT (array_agg(DISTINCT b.identifier ORDER BY b.identifier))[1:5] INTO v_verification FROM issues b
    JOIN relations r ON r.source_id = b.id AND r.type = 'blocks'
    JOIN issues i ON i.id = r.target_id
   WHERE b.verification = 'pending' AND b.status = 'done'
     AND i.org_id = p_org_id AND (p_project_id IS NULL OR i.project_id = p_project_id)
     AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
     AND i.open_blocker_count > 0 AND i.status IN ('todo', 'doing', 'blocked', 'review');
  -- When the org's next live lease may lapse: the caller's retryAfter (issues_lease_check_idx, one
  -- entry). lease_check_at is never after its lease's expiry, so the caller comes back no later.
  SELECT i.lease_check_at INTO v_next_lapse FROM issues i
   WHERE i.org_id = p_org_id
     AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at > p_now
   ORDER BY i.lease_check_at LIMIT 1;
  RETURN jsonb_build_object('ready', p_ready, 'otherLanes', v_other, 'awaitingTriage', v_triage,
                            'awaitingVerification', coalesce(to_jsonb(v_verification), '[]'), 'nextLapse', retasc_iso(v_next_lapse));
END
$$;
--> statement-breakpoint

CREATE OR REPLACE FUNCTION retasc_next_wave(p_org_id text, p_project_id text, p_project_ids text[], p_user_id text, p_all_lanes boolean,
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
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at IS NULL
            AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
          ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
          LIMIT 5)
        UNION ALL
        (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number, i.submitter_id, i.assignee_id FROM issues i
          WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now OFFSET 0) i
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
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at IS NULL
            AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
          ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
          LIMIT 5)
        UNION ALL
        (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number, i.submitter_id, i.assignee_id FROM issues i
          WHERE i.org_id = p_org_id AND i.project_id = p_project_id
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now OFFSET 0) i
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
