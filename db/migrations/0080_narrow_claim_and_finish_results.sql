-- Issue 30: a claim's and a finish's results carry what their replies read, not the whole issue
-- row. retasc_take_lease (as in 0070) and retasc_finish (as in 0075) returned to_jsonb of the row,
-- every column with its null; they return retasc_view_row, the columns an issue view reads
-- (server/issues/views.ts renderIssueView, and the lease's expiry a claim states), nulls left out
-- (issueRowFrom reads a missing column as null). A claim's reads carry no lease: its reply states
-- the lease itself and leaves the view's lease, held and statusNote out (server/queue/claim.ts
-- replyFor). Every statement of both functions is unchanged (db/testing/hot/leases.ts).
CREATE FUNCTION retasc_view_row(i issues) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_strip_nulls(jsonb_build_object(
    'id', i.id, 'identifier', i.identifier, 'title_enc', i.title_enc, 'body_enc', i.body_enc,
    'no_dependency_enc', i.no_dependency_enc, 'cancel_reason_enc', i.cancel_reason_enc, 'work', i.work,
    'change_type', i.change_type, 'status', i.status, 'triage', i.triage, 'priority', i.priority,
    'assignee_id', i.assignee_id, 'author_id', i.author_id, 'due_at', i.due_at, 'due_set_at', i.due_set_at,
    'own_level', i.own_level, 'effective_level', i.effective_level, 'effective_due_at', i.effective_due_at,
    'fence', i.fence, 'lease_expires_at', i.lease_expires_at, 'branch', i.branch,
    'verification', i.verification, 'verification_stale_at', i.verification_stale_at,
    'evidence_commit', i.evidence_commit, 'evidence_branch', i.evidence_branch, 'evidence_pr', i.evidence_pr,
    'created_at', i.created_at, 'updated_at', i.updated_at))
$$;--> statement-breakpoint
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
  RETURN jsonb_build_object('issue', retasc_view_row(v_row), 'reads', retasc_view_reads(p_issue_id, v_now, p_org_id)::jsonb || '{"lease": null}',
                            'now', retasc_iso(v_now),
                            'discussion', retasc_claim_discussion(p_issue_id, p_org_id), 'notices', v_notices);
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
  v_notices jsonb := '[]';
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
  IF v_row.author_id IS DISTINCT FROM p_user_id
     AND EXISTS (SELECT 1 FROM notify_bindings b WHERE b.org_id = p_org_id AND b.user_id = v_row.author_id AND b.status = 'active') THEN
    INSERT INTO outbox (job, payload, org_id)
    VALUES ('notify.issue_event', jsonb_build_object('orgId', p_org_id, 'issueId', v_row.id, 'kind', 'done', 'actorId', p_user_id), p_org_id);
    v_notices := jsonb_build_array(jsonb_build_object('channel', 'retasc_outbox', 'payload', ''));
  END IF;
  RETURN jsonb_build_object('outcome', 'finished', 'issue', retasc_view_row(v_row), 'reads', retasc_view_reads(v_row.id, p_now, p_org_id),
    'notices', v_notices || jsonb_build_object('channel', 'retasc_events',
        'payload', json_build_object('orgId', p_org_id, 'kind', 'issue.updated', 'issueId', v_row.id,
                                     'identifier', v_row.identifier, 'status', 'done')::text));
END
$function$;
