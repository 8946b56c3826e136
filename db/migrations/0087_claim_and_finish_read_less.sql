-- Issue 30, decision 120: a claim and a finish read less.
-- 1. A finish asks whether its issue has a blocking edge three times (the batch's look, the
--    look before the lock, the check after it). An issue whose relations bit (view_extras & 1,
--    migration 0085) is clear has never had a relation, so it has none: the bit is read first and
--    the relations are probed only when it is set. The bit is set in the transaction that adds
--    the issue's first relation, on the issue's row, so the check after the lock sees it as it
--    saw the relation.
-- 2. next_issue's wave is read once per batch and set of lanes, after every claim of the batch,
--    instead of once per claim: the calls of a batch that share their lanes get the same wave,
--    and it names none of the issues the batch took.
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
  SELECT (i.view_extras & 1) <> 0
         AND EXISTS (SELECT 1 FROM relations r WHERE r.org_id = p_org_id AND r.type = 'blocks' AND (r.source_id = i.id OR r.target_id = i.id))
    INTO v_edges FROM issues i WHERE i.org_id = p_org_id AND i.identifier = p_identifier;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('outcome', 'fallback');
  END IF;
  IF v_edges THEN
    PERFORM pg_advisory_xact_lock_shared(hashtext('rank:' || p_org_id));
  END IF;
  SELECT * INTO v_row FROM issues WHERE org_id = p_org_id AND identifier = p_identifier FOR UPDATE;
  -- An edge added between the look above and this lock means the graph lock was needed: fall back.
  -- Its trigger set the relations bit on this row, which the lock waited for.
  IF NOT v_row.work OR v_row.status IN ('done', 'canceled') OR v_row.open_blocker_count > 0
     OR v_row.lease_id IS NULL OR v_row.lease_expires_at <= p_now OR v_row.lease_token_hash IS DISTINCT FROM p_token_hash
     OR (v_row.status = 'review' AND v_row.submitter_id = p_user_id)
     OR (NOT v_edges AND (v_row.view_extras & 1) <> 0 AND EXISTS (SELECT 1 FROM relations r WHERE r.org_id = p_org_id AND r.type = 'blocks' AND (r.source_id = v_row.id OR r.target_id = v_row.id)))
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
  RETURN jsonb_build_object('outcome', 'finished', 'issue', retasc_view_row(v_row), 'reads', retasc_issue_view_reads(v_row, p_now, true),
    'notices', v_notices || jsonb_build_object('channel', 'retasc_events',
        'payload', json_build_object('orgId', p_org_id, 'kind', 'issue.updated', 'issueId', v_row.id,
                                     'identifier', v_row.identifier, 'status', 'done')::text));
END
$function$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION retasc_finishes(p_calls jsonb) RETURNS jsonb LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
  v_order integer[];
  v_calls jsonb[];
  v_orgs text[];
  v_edged text[];
  v_n integer;
  v_call jsonb;
  -- An array variable grows in place; appending to a jsonb value would copy it every call.
  v_results jsonb[] := '{}';
BEGIN
  WITH c AS MATERIALIZED (
    SELECT (t.ord - 1)::integer AS idx, t.call, i.id, i.org_id,
           (i.view_extras & 1) <> 0
             AND EXISTS (SELECT 1 FROM relations r WHERE r.type = 'blocks' AND (r.source_id = i.id OR r.target_id = i.id)) AS edges
      FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t(call, ord)
      LEFT JOIN issues i ON i.org_id = t.call->>'orgId' AND i.identifier = t.call->>'identifier')
  SELECT array_agg(c.idx ORDER BY c.id NULLS LAST, c.idx), array_agg(c.call ORDER BY c.id NULLS LAST, c.idx),
         array_agg(DISTINCT c.org_id ORDER BY c.org_id) FILTER (WHERE c.edges),
         array_agg(c.id) FILTER (WHERE c.edges)
    INTO v_order, v_calls, v_orgs, v_edged
    FROM c;
  PERFORM pg_advisory_xact_lock_shared(hashtext('rank:' || o.org_id)) FROM unnest(v_orgs) WITH ORDINALITY AS o(org_id, n) ORDER BY o.n;
  IF cardinality(v_order) > 1 AND v_edged IS NOT NULL THEN
    PERFORM 1 FROM issues t
     WHERE t.id IN (SELECT r.target_id FROM relations r WHERE r.source_id = ANY(v_edged) AND r.type = 'blocks')
     ORDER BY t.id FOR NO KEY UPDATE;
  END IF;
  FOR v_n IN 1 .. coalesce(cardinality(v_order), 0) LOOP
    v_call := v_calls[v_n];
    v_results := array_append(v_results, jsonb_build_object('index', v_order[v_n]) || retasc_finish(
      v_call->>'orgId', v_call->>'identifier', v_call->>'tokenHash', (v_call->>'now')::timestamptz,
      v_call->>'userId', v_call->>'keyId', v_call->>'runtime', v_call->'charge'));
  END LOOP;
  RETURN to_jsonb(v_results);
END
$$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION retasc_next_issues(p_calls jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_index integer;
  v_call jsonb;
  v_result jsonb;
  v_project_ids text[];
  -- An array variable grows in place; appending to a jsonb value would copy it every call.
  v_results jsonb[] := '{}';
  -- Each result's call, by the result's place in v_results.
  v_calls jsonb[] := '{}';
  v_n integer;
  v_lanes text;
  -- The wave of each set of lanes this batch has read one for.
  v_waves jsonb := '{}';
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
        'activeClaims', CASE WHEN (v_result->>'otherClaims')::integer > 0 AND v_call->>'sessionId' IS NOT NULL
                             THEN retasc_session_claims(v_call->>'sessionId', v_call->>'keyId', (v_call->>'now')::timestamptz, v_result->'issue'->>'id')
                             ELSE '[]' END);
    ELSIF v_result->>'outcome' = 'empty' THEN
      v_result := v_result || jsonb_build_object('activeClaims', CASE WHEN v_call->>'sessionId' IS NOT NULL
        THEN retasc_session_claims(v_call->>'sessionId', v_call->>'keyId', (v_call->>'now')::timestamptz, NULL) ELSE '[]' END);
    END IF;
    v_results := array_append(v_results, jsonb_build_object('index', v_index) || v_result);
    v_calls := array_append(v_calls, v_call);
  END LOOP;
  -- The wave, once every claim of the batch is taken: one read per set of lanes (the org, the
  -- project key's project, the member's projects, the person, all lanes or not), shared by the
  -- batch's claims in those lanes, none of whose issues it names.
  FOR v_n IN 1 .. cardinality(v_results) LOOP
    CONTINUE WHEN v_results[v_n]->>'outcome' IS DISTINCT FROM 'claimed' OR v_results[v_n] ? 'quarantined';
    v_call := v_calls[v_n];
    v_lanes := jsonb_build_array(v_call->'orgId', v_call->'projectId', v_call->'projectIds', v_call->'userId', v_call->'allLanes')::text;
    IF NOT v_waves ? v_lanes THEN
      v_project_ids := CASE WHEN jsonb_typeof(v_call->'projectIds') = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(v_call->'projectIds')) END;
      v_waves := v_waves || jsonb_build_object(v_lanes,
        retasc_next_wave(v_call->>'orgId', v_call->>'projectId', v_project_ids, v_call->>'userId', (v_call->>'allLanes')::boolean,
                         (v_call->>'now')::timestamptz));
    END IF;
    v_results[v_n] := v_results[v_n] || jsonb_build_object('wave', v_waves->v_lanes);
  END LOOP;
  RETURN to_jsonb(v_results);
END
$$;
