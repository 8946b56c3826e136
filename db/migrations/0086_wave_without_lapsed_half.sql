-- Issue 30: next_issue's wave (0052, 0064) reads the pick's two halves, unleased candidates and
-- lapsed leases, as a union sorted again: a tenth of PostgreSQL's CPU per claim + finish
-- (bench/claim-cpu.ts with the wave stubbed out). Lapsed leases in reach are rare (the reclaim
-- sweep ends them), so the wave first asks whether there are any, with the probe the pick's locked
-- read asks (0084), and without them reads the unleased half alone. The result is the same: with
-- no lapsed row in reach, the union's lapsed half is empty (decision 119).
CREATE OR REPLACE FUNCTION retasc_next_wave(p_org_id text, p_project_id text, p_project_ids text[], p_user_id text, p_all_lanes boolean,
                                 p_now timestamptz)
RETURNS jsonb LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
  v_wave jsonb;
BEGIN
  -- No lapsed lease within reach (the probe of 0084's pick): the wave is the unleased half alone,
  -- one ordered read of five without the union and its sort. Otherwise both halves, as in 0064.
  IF NOT EXISTS (SELECT 1 FROM issues i
       WHERE i.org_id = p_org_id AND (p_project_id IS NULL OR i.project_id = p_project_id)
         AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
         AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending'
         AND i.lease_check_at <= p_now AND i.lease_expires_at <= p_now) THEN
    IF p_project_id IS NULL THEN
      SELECT jsonb_agg(jsonb_build_object('identifier', i.identifier, 'titleEnc', i.title_enc, 'priority', i.priority, 'effectiveLevel', i.effective_level)
                     ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC)
        INTO v_wave FROM
        (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM issues i
          WHERE i.org_id = p_org_id AND (p_project_ids IS NULL OR i.project_id = ANY(p_project_ids))
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at IS NULL
            AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
          ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
          LIMIT 5) i;
    ELSE
      SELECT jsonb_agg(jsonb_build_object('identifier', i.identifier, 'titleEnc', i.title_enc, 'priority', i.priority, 'effectiveLevel', i.effective_level)
                     ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC)
        INTO v_wave FROM
        (SELECT i.identifier, i.title_enc, i.priority, i.effective_level, i.status, i.effective_due_at, i.created_at, i.number FROM issues i
          WHERE i.project_id = p_project_id
            AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0 AND i.triage IS DISTINCT FROM 'pending' AND i.lease_check_at IS NULL
            AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
            AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
          ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
          LIMIT 5) i;
    END IF;
    RETURN coalesce(v_wave, '[]');
  END IF;
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
