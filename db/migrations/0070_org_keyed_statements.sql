-- Org-keyed statements, ready to partition (issue 36, decision 099): every hot statement of
-- dispatch, finish, the view reads and the leases names its org, so with the tables partitioned
-- by hash of org_id each reads one partition (db/partition-plan.test.ts). Behaviour is unchanged:
-- every row a statement reaches by id is of the caller's org already. retasc_key_budget,
-- retasc_view_reads, retasc_claim_discussion and retasc_session_claims take the org as a new last
-- argument (new overloads; the old ones stay for an instance of the previous version).
CREATE OR REPLACE FUNCTION public.retasc_key_budget(p_key_id text, p_now timestamp with time zone, p_org_id text)
 RETURNS integer
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('key:' || p_key_id));
  RETURN (SELECT count(*) FROM leases WHERE org_id = p_org_id AND key_id = p_key_id AND ended_at IS NULL AND expires_at > p_now);
END
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.retasc_view_reads(p_issue_id text, p_now timestamp with time zone, p_org_id text)
 RETURNS json
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
BEGIN
  RETURN (SELECT json_build_object(
    'rels', (SELECT coalesce(json_agg(json_build_object('type', r.type, 'sourceId', r.source_id, 'targetId', r.target_id,
                                                       'identifier', o.identifier, 'status', o.status, 'projectId', o.project_id)), '[]')
               FROM relations r JOIN issues o ON o.org_id = p_org_id AND o.id = CASE WHEN r.source_id = i.id THEN r.target_id ELSE r.source_id END
              WHERE r.org_id = p_org_id AND (r.source_id = i.id OR r.target_id = i.id)),
    'labels', (SELECT coalesce(json_agg(l.name ORDER BY l.name), '[]')
                 FROM issue_labels il JOIN labels l ON l.id = il.label_id WHERE il.issue_id = i.id),
    'children', (SELECT coalesce(json_agg(json_build_object('identifier', c.identifier, 'projectId', c.project_id) ORDER BY c.number), '[]')
                   FROM issues c WHERE c.org_id = p_org_id AND c.parent_id = i.id),
    'parent', (SELECT json_build_object('identifier', p.identifier, 'projectId', p.project_id) FROM issues p WHERE p.org_id = p_org_id AND p.id = i.parent_id),
    'checkpoint', (SELECT json_build_object('doneEnc', cp.done_enc, 'nextEnc', cp.next_enc, 'gotchasEnc', cp.gotchas_enc,
                                            'noteEnc', cp.note_enc, 'branch', cp.branch, 'runtime', cp.runtime,
                                            'userId', cp.user_id, 'createdAt', retasc_iso(cp.created_at))
                     FROM checkpoints cp WHERE cp.org_id = p_org_id AND cp.issue_id = i.id ORDER BY cp.created_at DESC, cp.id DESC LIMIT 1),
    'lease', (SELECT json_build_object('userId', l.user_id, 'runtime', l.runtime, 'keyId', l.key_id, 'fence', l.fence,
                                       'expiresAt', retasc_iso(l.expires_at),
                                       'holder', CASE WHEN u.id IS NULL THEN NULL
                                                      ELSE json_build_object('userId', u.id, 'email', u.email, 'name', u.name) END)
                FROM leases l LEFT JOIN "user" u ON u.id = l.user_id
               WHERE l.org_id = p_org_id AND l.id = i.lease_id AND i.lease_expires_at > p_now),
    'people', (SELECT coalesce(json_agg(json_build_object('userId', u.id, 'email', u.email, 'name', u.name)), '[]')
                 FROM "user" u WHERE u.id IN (i.assignee_id, i.author_id)))
    FROM issues i WHERE i.org_id = p_org_id AND i.id = p_issue_id);
END
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.retasc_claim_discussion(p_issue_id text, p_org_id text)
 RETURNS json
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
BEGIN
  RETURN json_build_object(
    'comments', (SELECT coalesce(json_agg(json_build_object('id', c.id, 'bodyEnc', c.body_enc, 'createdAt', retasc_iso(c.created_at),
                                                          'runtime', c.runtime, 'name', c.name)
                                        ORDER BY c.created_at DESC, c.id DESC), '[]')
                   FROM (SELECT cm.id, cm.body_enc, cm.created_at, cm.runtime, u.name
                           FROM comments cm LEFT JOIN "user" u ON u.id = cm.author_id
                          WHERE cm.org_id = p_org_id AND cm.issue_id = p_issue_id AND cm.retracted_at IS NULL
                          ORDER BY cm.created_at DESC, cm.id DESC LIMIT 5) c),
    'commentsTotal', (SELECT count(*) FROM comments cm WHERE cm.org_id = p_org_id AND cm.issue_id = p_issue_id AND cm.retracted_at IS NULL),
    'attachments', (SELECT coalesce(json_agg(json_build_object('id', a.id, 'urlEnc', a.url_enc, 'titleEnc', a.title_enc,
                                                             'contentType', a.content_type, 'size', a.size_bytes)
                                           ORDER BY a.created_at DESC, a.id DESC), '[]')
                      FROM (SELECT at.id, at.url_enc, at.title_enc, at.created_at, f.content_type, f.size_bytes
                              FROM attachments at LEFT JOIN attachment_files f ON f.attachment_id = at.id
                             WHERE at.org_id = p_org_id AND at.issue_id = p_issue_id AND at.obsoleted_at IS NULL
                             ORDER BY at.created_at DESC, at.id DESC LIMIT 5) a),
    'attachmentsTotal', (SELECT count(*) FROM attachments at WHERE at.org_id = p_org_id AND at.issue_id = p_issue_id AND at.obsoleted_at IS NULL));
END
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.retasc_session_claims(p_session_id text, p_key_id text, p_now timestamp with time zone, p_except text, p_org_id text)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  SELECT coalesce(jsonb_agg(i.identifier ORDER BY l.claimed_at), '[]')
    FROM leases l JOIN issues i ON i.org_id = p_org_id AND i.id = l.issue_id AND i.lease_id = l.id
   WHERE l.org_id = p_org_id AND l.session_id = p_session_id AND l.key_id = p_key_id AND l.ended_at IS NULL
     AND i.lease_expires_at > p_now AND i.id IS DISTINCT FROM p_except
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.retasc_abandoned_claim(p_issue_id text, p_lease_id text, p_org_id text, p_now timestamp with time zone)
 RETURNS boolean
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  v_lease leases;
  v_issue issues;
  v_after integer;
  v_count integer;
  v_reason text;
BEGIN
  SELECT * INTO v_lease FROM leases WHERE org_id = p_org_id AND id = p_lease_id;
  SELECT * INTO v_issue FROM issues WHERE org_id = p_org_id AND id = p_issue_id;
  IF v_lease.id IS NULL OR v_issue.id IS NULL OR v_issue.abandoned_fence >= v_lease.fence THEN
    RETURN false;
  END IF;
  IF EXISTS (SELECT 1 FROM checkpoints c WHERE c.org_id = p_org_id AND c.issue_id = p_issue_id AND c.lease_id = p_lease_id) THEN
    UPDATE issues SET abandoned_claims = 0, abandoned_fence = v_lease.fence WHERE org_id = p_org_id AND id = p_issue_id;
    RETURN false;
  END IF;
  v_count := CASE WHEN v_issue.abandoned_fence = v_lease.fence - 1 THEN v_issue.abandoned_claims + 1 ELSE 1 END;
  SELECT quarantine_after INTO v_after FROM projects WHERE org_id = p_org_id AND id = v_issue.project_id;
  IF v_count < v_after OR v_issue.status NOT IN ('todo', 'doing', 'review') OR v_issue.quarantined_at IS NOT NULL THEN
    UPDATE issues SET abandoned_claims = v_count, abandoned_fence = v_lease.fence WHERE org_id = p_org_id AND id = p_issue_id;
    RETURN false;
  END IF;
  v_reason := format('quarantined after %s abandoned claims', v_count);
  UPDATE issues
     SET abandoned_claims = v_count, abandoned_fence = v_lease.fence, status = 'blocked',
         quarantined_at = p_now, quarantine_reason = v_reason, updated_at = p_now,
         sla_next_at = CASE WHEN v_issue.status = 'review' THEN p_now ELSE sla_next_at END
   WHERE org_id = p_org_id AND id = p_issue_id;
  INSERT INTO activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
  VALUES (p_org_id, p_issue_id, 'quarantined', NULL, NULL, 'retasc',
          jsonb_build_object('from', v_issue.status, 'to', 'blocked', 'claims', v_count, 'fence', v_lease.fence, 'reason', v_reason),
          p_now);
  INSERT INTO outbox (job, payload, org_id)
  VALUES ('notify.issue_event', jsonb_build_object('orgId', p_org_id, 'issueId', p_issue_id, 'kind', 'issue_quarantined', 'actorId', NULL), p_org_id);
  RETURN true;
END
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.retasc_record_expiry(p_lease_id text, p_issue_id text, p_org_id text, p_now timestamp with time zone, p_by text)
 RETURNS boolean
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  v_lease leases;
BEGIN
  UPDATE leases SET ended_at = p_now, end_reason = 'expired', reclaim_recorded_at = p_now
   WHERE org_id = p_org_id AND id = p_lease_id AND ended_at IS NULL
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
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.retasc_take_lease(p_issue_id text, p_org_id text, p_user_id text, p_key_id text, p_runtime text, p_now timestamp with time zone, p_lease_id text, p_token_hash text, p_ttl_ms bigint, p_session_id text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  v_row issues;
  v_now timestamptz;
  v_fence integer;
  v_expires timestamptz;
  v_review boolean;
  v_notices jsonb := '[]';
BEGIN
  SELECT * INTO v_row FROM issues WHERE org_id = p_org_id AND id = p_issue_id;
  IF v_row.lease_id IS NOT NULL AND retasc_record_expiry(v_row.lease_id, v_row.id, p_org_id, p_now, 'claim') THEN
    v_notices := jsonb_build_array(jsonb_build_object('channel', 'retasc_outbox', 'payload', ''));
    -- The lapse this claim found quarantined the issue (retasc_abandoned_claim): it takes nothing.
    IF EXISTS (SELECT 1 FROM issues WHERE org_id = p_org_id AND id = p_issue_id AND quarantined_at IS NOT NULL) THEN
      UPDATE issues SET lease_id = NULL, lease_token_hash = NULL, lease_expires_at = NULL WHERE org_id = p_org_id AND id = p_issue_id;
      RETURN jsonb_build_object('quarantined', true, 'identifier', v_row.identifier, 'notices', v_notices);
    END IF;
  END IF;
  -- Never before the previous lease ended, whatever the callers' clocks: the leases of one
  -- issue never overlap.
  v_now := p_now;
  IF v_row.fence > 0 THEN
    SELECT greatest(p_now, l.ended_at) INTO v_now FROM leases l WHERE l.org_id = p_org_id AND l.issue_id = p_issue_id AND l.fence = v_row.fence;
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
   WHERE org_id = p_org_id AND id = p_issue_id
  RETURNING * INTO v_row;
  INSERT INTO activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
  VALUES (p_org_id, p_issue_id, 'claimed', p_user_id, p_key_id, p_runtime,
          jsonb_build_object('fence', v_fence, 'expiresAt', retasc_iso(v_expires), 'review', v_review), v_now);
  v_notices := v_notices || jsonb_build_object('channel', 'retasc_events',
    'payload', json_build_object('orgId', p_org_id, 'kind', 'claim.taken', 'issueId', p_issue_id,
                                 'identifier', v_row.identifier, 'fence', v_fence)::text);
  RETURN jsonb_build_object('issue', to_jsonb(v_row), 'reads', retasc_view_reads(p_issue_id, v_now, p_org_id), 'now', retasc_iso(v_now),
                            'discussion', retasc_claim_discussion(p_issue_id, p_org_id), 'notices', v_notices);
END
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.retasc_next_issue(p_org_id text, p_project_id text, p_all_lanes boolean, p_check_sla boolean, p_cap integer, p_user_id text, p_key_id text, p_runtime text, p_now timestamp with time zone, p_lease_id text, p_token_hash text, p_ttl_ms bigint, p_charge jsonb, p_session_id text, p_project_ids text[])
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
     WHERE i.org_id = p_org_id AND i.id = v_id
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
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.retasc_next_issues(p_calls jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
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
                             THEN retasc_session_claims(v_call->>'sessionId', v_call->>'keyId', (v_call->>'now')::timestamptz, v_result->'issue'->>'id', v_call->>'orgId')
                             ELSE '[]' END);
    ELSIF v_result->>'outcome' = 'empty' THEN
      v_result := v_result || jsonb_build_object('activeClaims', CASE WHEN v_call->>'sessionId' IS NOT NULL
        THEN retasc_session_claims(v_call->>'sessionId', v_call->>'keyId', (v_call->>'now')::timestamptz, NULL, v_call->>'orgId') ELSE '[]' END);
    END IF;
    v_results := array_append(v_results, jsonb_build_object('index', v_index) || v_result);
  END LOOP;
  RETURN to_jsonb(v_results);
END
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.retasc_empty_poll(p_org_id text, p_project_id text, p_project_ids text[], p_user_id text, p_all_lanes boolean, p_now timestamp with time zone, p_ready integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
 SET enable_bitmapscan TO 'off'
 SET enable_sort TO 'off'
AS $function$
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
    JOIN relations r ON r.org_id = p_org_id AND r.source_id = b.id AND r.type = 'blocks'
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
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.retasc_finish(p_org_id text, p_identifier text, p_token_hash text, p_now timestamp with time zone, p_user_id text, p_key_id text, p_runtime text, p_charge jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  v_row issues;
  v_edges boolean;
  v_from text;
  v_level smallint;
BEGIN
  SELECT EXISTS (SELECT 1 FROM relations r WHERE r.org_id = p_org_id AND r.type = 'blocks' AND (r.source_id = i.id OR r.target_id = i.id))
    INTO v_edges FROM issues i WHERE i.org_id = p_org_id AND i.identifier = p_identifier;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('outcome', 'fallback');
  END IF;
  IF v_edges THEN
    PERFORM pg_advisory_xact_lock_shared(hashtext('rank:' || p_org_id));
  END IF;
  SELECT * INTO v_row FROM issues WHERE org_id = p_org_id AND identifier = p_identifier FOR UPDATE;
  -- An edge added between the look above and this lock means the graph lock was needed: fall back.
  IF NOT v_row.work OR v_row.status IN ('done', 'canceled') OR v_row.open_blocker_count > 0
     OR v_row.lease_id IS NULL OR v_row.lease_expires_at <= p_now OR v_row.lease_token_hash IS DISTINCT FROM p_token_hash
     OR (v_row.status = 'review' AND v_row.submitter_id = p_user_id)
     OR (NOT v_edges AND EXISTS (SELECT 1 FROM relations r WHERE r.org_id = p_org_id AND r.type = 'blocks' AND (r.source_id = v_row.id OR r.target_id = v_row.id)))
     OR EXISTS (SELECT 1 FROM projects p WHERE p.id = v_row.project_id AND p.verification_mode <> 'off')
  THEN
    RETURN jsonb_build_object('outcome', 'fallback');
  END IF;
  -- Billing on: a refused charge falls back too, and the general path answers with the refusal.
  IF p_charge IS NOT NULL AND retasc_charge(p_org_id, p_user_id, p_key_id, p_runtime, p_charge->>'tool', p_charge->>'tier',
                                            (p_charge->>'microCredits')::bigint, v_row.id, true, p_now) IN ('BILLING_INACTIVE', 'SPEND_CAP') THEN
    RETURN jsonb_build_object('outcome', 'fallback');
  END IF;
  v_from := v_row.status;
  -- A closed issue ranks by its priority alone and gates nothing (server/issues/levels.ts levelOfPriority).
  v_level := CASE WHEN v_row.priority = 0 THEN 0 ELSE 5 - v_row.priority END;
  UPDATE leases SET ended_at = p_now, end_reason = 'finished' WHERE org_id = p_org_id AND id = v_row.lease_id AND ended_at IS NULL;
  UPDATE issues
     SET status = 'done', updated_at = p_now, own_level = v_level, effective_level = v_level, effective_due_at = NULL,
         sla_state = 'none', sla_next_at = NULL, lease_id = NULL, lease_token_hash = NULL, lease_expires_at = NULL
   WHERE org_id = p_org_id AND id = v_row.id
  RETURNING * INTO v_row;
  IF v_edges THEN
    UPDATE issues SET open_blocker_count = open_blocker_count - 1
     WHERE org_id = p_org_id AND id IN (SELECT target_id FROM relations WHERE org_id = p_org_id AND source_id = v_row.id AND type = 'blocks');
  END IF;
  INSERT INTO activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
  VALUES (p_org_id, v_row.id, 'finished', p_user_id, p_key_id, p_runtime,
          jsonb_build_object('from', v_from, 'to', 'done', 'fence', v_row.fence), p_now);
  INSERT INTO outbox (job, payload, org_id)
  VALUES ('notify.issue_event', jsonb_build_object('orgId', p_org_id, 'issueId', v_row.id, 'kind', 'done', 'actorId', p_user_id), p_org_id);
  RETURN jsonb_build_object('outcome', 'finished', 'issue', to_jsonb(v_row), 'reads', retasc_view_reads(v_row.id, p_now, p_org_id),
    'notices', jsonb_build_array(
      jsonb_build_object('channel', 'retasc_outbox', 'payload', ''),
      jsonb_build_object('channel', 'retasc_events',
        'payload', json_build_object('orgId', p_org_id, 'kind', 'issue.updated', 'issueId', v_row.id,
                                     'identifier', v_row.identifier, 'status', 'done')::text)));
END
$function$;
