-- The dispatch hot path as functions, so a claim or a finish is one statement and one round
-- trip (docs/decisions/006-dispatch-in-sql-functions.md). They return their NOTIFYs as
-- `notices` for the caller to send after commit (server/events sendNotices): a NOTIFY inside
-- a transaction holds PostgreSQL's global notify lock through its commit flush, which
-- serialises every committing claim. Their statements look rows up by key,
-- so they keep generic plans (planned once per connection) whatever the connection's
-- plan_cache_mode; only the dispatch pick is planned for its actual scope every time. The TypeScript callers live in
-- server/queue/index.ts (retasc_next_issue, retasc_take_lease, retasc_record_expiry) and
-- server/issues/index.ts (retasc_finish); server/issues/views.ts reads views through
-- retasc_view_reads. Channel names are EVENTS_CHANNEL and OUTBOX_CHANNEL of server/events and
-- server/outbox; payloads match workers/jobs.ts (notify.issue_event) and RetascEvent.

-- A timestamp as JavaScript's toISOString writes it. STABLE like to_char, so it is inlined.
CREATE FUNCTION retasc_iso(ts timestamptz) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
--> statement-breakpoint

-- Everything an issue view shows besides the issue row, as one JSON object. The lease is
-- shown only while live at p_now.
CREATE FUNCTION retasc_view_reads(p_issue_id text, p_now timestamptz) RETURNS json LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
BEGIN
  RETURN (SELECT json_build_object(
    'rels', (SELECT coalesce(json_agg(json_build_object('type', r.type, 'sourceId', r.source_id, 'targetId', r.target_id,
                                                       'identifier', o.identifier, 'status', o.status)), '[]')
               FROM relations r JOIN issues o ON o.id = CASE WHEN r.source_id = i.id THEN r.target_id ELSE r.source_id END
              WHERE r.source_id = i.id OR r.target_id = i.id),
    'labels', (SELECT coalesce(json_agg(l.name ORDER BY l.name), '[]')
                 FROM issue_labels il JOIN labels l ON l.id = il.label_id WHERE il.issue_id = i.id),
    'children', (SELECT coalesce(json_agg(c.identifier ORDER BY c.number), '[]') FROM issues c WHERE c.parent_id = i.id),
    'parent', (SELECT p.identifier FROM issues p WHERE p.id = i.parent_id),
    'checkpoint', (SELECT json_build_object('doneEnc', cp.done_enc, 'nextEnc', cp.next_enc, 'gotchasEnc', cp.gotchas_enc,
                                            'noteEnc', cp.note_enc, 'branch', cp.branch, 'runtime', cp.runtime,
                                            'userId', cp.user_id, 'createdAt', retasc_iso(cp.created_at))
                     FROM checkpoints cp WHERE cp.issue_id = i.id ORDER BY cp.created_at DESC, cp.id DESC LIMIT 1),
    'lease', (SELECT json_build_object('userId', l.user_id, 'runtime', l.runtime, 'keyId', l.key_id, 'fence', l.fence,
                                       'expiresAt', retasc_iso(l.expires_at),
                                       'holder', CASE WHEN u.id IS NULL THEN NULL
                                                      ELSE json_build_object('userId', u.id, 'email', u.email, 'name', u.name) END)
                FROM leases l LEFT JOIN "user" u ON u.id = l.user_id
               WHERE l.id = i.lease_id AND i.lease_expires_at > p_now),
    'people', (SELECT coalesce(json_agg(json_build_object('userId', u.id, 'email', u.email, 'name', u.name)), '[]')
                 FROM "user" u WHERE u.id IN (i.assignee_id, i.author_id)))
    FROM issues i WHERE i.id = p_issue_id);
END
$$;
--> statement-breakpoint

-- A key's live claims, counted under a lock on the key (an advisory one: nothing is written),
-- so one key's claims are serialised and its cap holds exactly however many agents share it.
CREATE FUNCTION retasc_key_budget(p_key_id text, p_now timestamptz) RETURNS integer LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('key:' || p_key_id));
  RETURN (SELECT count(*) FROM leases WHERE key_id = p_key_id AND ended_at IS NULL AND expires_at > p_now);
END
$$;
--> statement-breakpoint

-- Ends an expired lease once and records the reclaim (activity, notice); whoever gets there
-- first, the sweep or a claim, records it. The actor is the system principal (runtime 'retasc').
-- The caller wakes the outbox (OUTBOX_CHANNEL) when it returns true.
CREATE FUNCTION retasc_record_expiry(p_lease_id text, p_issue_id text, p_org_id text, p_now timestamptz, p_by text)
RETURNS boolean LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
  v_lease leases;
BEGIN
  UPDATE leases SET ended_at = p_now, end_reason = 'expired', reclaim_recorded_at = p_now
   WHERE id = p_lease_id AND ended_at IS NULL
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
  RETURN true;
END
$$;
--> statement-breakpoint

-- Takes the lease on an issue whose row lock the caller holds and which the caller found
-- claimable: ends an expired predecessor, bumps the fence, records and publishes the claim.
-- Returns the issue row, the view's reads, the instant the lease starts and the notices.
CREATE FUNCTION retasc_take_lease(p_issue_id text, p_org_id text, p_user_id text, p_key_id text, p_runtime text,
                                  p_now timestamptz, p_lease_id text, p_token_hash text, p_ttl_ms bigint)
RETURNS jsonb LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
  v_row issues;
  v_now timestamptz;
  v_fence integer;
  v_expires timestamptz;
  v_review boolean;
  v_notices jsonb := '[]';
BEGIN
  SELECT * INTO v_row FROM issues WHERE id = p_issue_id;
  IF v_row.lease_id IS NOT NULL AND retasc_record_expiry(v_row.lease_id, v_row.id, p_org_id, p_now, 'claim') THEN
    v_notices := jsonb_build_array(jsonb_build_object('channel', 'retasc_outbox', 'payload', ''));
  END IF;
  -- Never before the previous lease ended, whatever the callers' clocks: the leases of one
  -- issue never overlap.
  v_now := p_now;
  IF v_row.fence > 0 THEN
    SELECT greatest(p_now, l.ended_at) INTO v_now FROM leases l WHERE l.issue_id = p_issue_id AND l.fence = v_row.fence;
  END IF;
  v_fence := v_row.fence + 1;
  v_expires := v_now + p_ttl_ms * interval '1 millisecond';
  v_review := v_row.status = 'review';
  INSERT INTO leases (id, org_id, issue_id, fence, key_id, user_id, runtime, claimed_at, heartbeat_at, expires_at)
  VALUES (p_lease_id, p_org_id, p_issue_id, v_fence, p_key_id, coalesce(p_user_id, 'system'), coalesce(p_runtime, 'unknown'),
          v_now, v_now, v_expires);
  UPDATE issues
     SET fence = v_fence, lease_id = p_lease_id, lease_token_hash = p_token_hash, lease_expires_at = v_expires,
         status = CASE WHEN v_review THEN 'review' ELSE 'doing' END,
         first_claimed_at = coalesce(first_claimed_at, v_now), updated_at = v_now
   WHERE id = p_issue_id
  RETURNING * INTO v_row;
  INSERT INTO activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
  VALUES (p_org_id, p_issue_id, 'claimed', p_user_id, p_key_id, p_runtime,
          jsonb_build_object('fence', v_fence, 'expiresAt', retasc_iso(v_expires), 'review', v_review), v_now);
  v_notices := v_notices || jsonb_build_object('channel', 'retasc_events',
    'payload', json_build_object('orgId', p_org_id, 'kind', 'claim.taken', 'issueId', p_issue_id,
                                 'identifier', v_row.identifier, 'fence', v_fence)::text);
  RETURN jsonb_build_object('issue', to_jsonb(v_row), 'reads', retasc_view_reads(p_issue_id, v_now), 'now', retasc_iso(v_now),
                            'notices', v_notices);
END
$$;
--> statement-breakpoint

-- next_issue in one statement: the SLA check, the key's live-claim budget, the most urgent
-- dispatchable issue of the caller's lanes (docs/architecture.md#dispatch; skipping rows being claimed),
-- then the lease. A key of one project and an org-wide key each get their own statements, so
-- each keeps one generic plan on its index (issues_dispatch_idx, issues_org_dispatch_idx);
-- the two picks differ only in scope.
-- outcome: 'sla' (a deadline threshold passed: sweep, then call again), 'empty', 'cap', or
-- 'claimed' with retasc_take_lease's result and otherClaims.
CREATE FUNCTION retasc_next_issue(p_org_id text, p_project_id text, p_all_lanes boolean, p_check_sla boolean, p_cap integer,
                                  p_user_id text, p_key_id text, p_runtime text, p_now timestamptz,
                                  p_lease_id text, p_token_hash text, p_ttl_ms bigint)
RETURNS jsonb LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
  v_live integer := 0;
  v_id text;
  v_sla_due boolean;
  v_foreign boolean;
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
       AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0
       AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= p_now)
       AND (p_user_id IS NULL OR NOT (i.status = 'review' AND i.submitter_id IS NOT DISTINCT FROM p_user_id))
       AND (p_all_lanes OR p_user_id IS NULL OR i.assignee_id IS NULL OR i.assignee_id = p_user_id)
     ORDER BY i.effective_level DESC, (i.status = 'review') DESC, i.effective_due_at ASC NULLS LAST, i.created_at ASC, i.number ASC
     LIMIT 1
     FOR UPDATE SKIP LOCKED;
  ELSE
    SELECT i.id INTO v_id FROM issues i
     WHERE i.project_id = p_project_id
       AND i.work AND i.status IN ('todo', 'doing', 'review') AND i.open_blocker_count = 0
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
  RETURN retasc_take_lease(v_id, p_org_id, p_user_id, p_key_id, p_runtime, p_now, p_lease_id, p_token_hash, p_ttl_ms)
         || jsonb_build_object('outcome', 'claimed', 'otherClaims', v_live);
END
$$;
--> statement-breakpoint

-- Finishing held work as done with the live claim token, in one statement: the common end of
-- every claim. Anything else (a stale or missing token, open blockers, a self-review, an
-- issue not found) returns outcome 'fallback' having written nothing, and the general path
-- of saveIssue answers it. Closing an issue with dependency edges takes the org's graph lock
-- shared first, as server/queue/ranking.ts lockOrgGraph does, and what it gated loses a blocker.
CREATE FUNCTION retasc_finish(p_org_id text, p_identifier text, p_token_hash text, p_now timestamptz,
                              p_user_id text, p_key_id text, p_runtime text)
RETURNS jsonb LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
  v_row issues;
  v_edges boolean;
  v_from text;
  v_level smallint;
BEGIN
  SELECT EXISTS (SELECT 1 FROM relations r WHERE r.type = 'blocks' AND (r.source_id = i.id OR r.target_id = i.id))
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
     OR (NOT v_edges AND EXISTS (SELECT 1 FROM relations r WHERE r.type = 'blocks' AND (r.source_id = v_row.id OR r.target_id = v_row.id)))
  THEN
    RETURN jsonb_build_object('outcome', 'fallback');
  END IF;
  v_from := v_row.status;
  -- A closed issue ranks by its priority alone and gates nothing (server/issues/levels.ts levelOfPriority).
  v_level := CASE WHEN v_row.priority = 0 THEN 0 ELSE 5 - v_row.priority END;
  UPDATE leases SET ended_at = p_now, end_reason = 'finished' WHERE id = v_row.lease_id AND ended_at IS NULL;
  UPDATE issues
     SET status = 'done', updated_at = p_now, own_level = v_level, effective_level = v_level, effective_due_at = NULL,
         sla_state = 'none', sla_next_at = NULL, lease_id = NULL, lease_token_hash = NULL, lease_expires_at = NULL
   WHERE id = v_row.id
  RETURNING * INTO v_row;
  IF v_edges THEN
    UPDATE issues SET open_blocker_count = open_blocker_count - 1
     WHERE id IN (SELECT target_id FROM relations WHERE source_id = v_row.id AND type = 'blocks');
  END IF;
  INSERT INTO activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
  VALUES (p_org_id, v_row.id, 'finished', p_user_id, p_key_id, p_runtime,
          jsonb_build_object('from', v_from, 'to', 'done', 'fence', v_row.fence), p_now);
  INSERT INTO outbox (job, payload, org_id)
  VALUES ('notify.issue_event', jsonb_build_object('orgId', p_org_id, 'issueId', v_row.id, 'kind', 'done', 'actorId', p_user_id), p_org_id);
  RETURN jsonb_build_object('outcome', 'finished', 'issue', to_jsonb(v_row), 'reads', retasc_view_reads(v_row.id, p_now),
    'notices', jsonb_build_array(
      jsonb_build_object('channel', 'retasc_outbox', 'payload', ''),
      jsonb_build_object('channel', 'retasc_events',
        'payload', json_build_object('orgId', p_org_id, 'kind', 'issue.updated', 'issueId', v_row.id,
                                     'identifier', v_row.identifier, 'status', 'done')::text)));
END
$$;
--> statement-breakpoint

-- Claims that arrive together, as one statement: one round trip and one commit for the lot (an
-- application-side group commit; server/queue/batching.ts). p_calls is an array of
-- retasc_next_issue's arguments by name; results come back as an array of
-- {index, ...result} in any order. Calls run in key order, so batches running side by side take
-- the keys' budget locks in one order and never deadlock on them.
CREATE FUNCTION retasc_next_issues(p_calls jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
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
      v_call->>'leaseId', v_call->>'tokenHash', (v_call->>'ttlMs')::bigint));
  END LOOP;
  RETURN to_jsonb(v_results);
END
$$;
--> statement-breakpoint

-- Finishes that arrive together, as one statement (see retasc_next_issues). The org graph locks
-- any of them needs are taken first, shared, so no finish waits for one while holding a row;
-- then the finishes run in issue id order, the order every multi-row lock takes rows in.
CREATE FUNCTION retasc_finishes(p_calls jsonb) RETURNS jsonb LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
  v_index integer;
  v_call jsonb;
  -- An array variable grows in place; appending to a jsonb value would copy it every call.
  v_results jsonb[] := '{}';
BEGIN
  PERFORM pg_advisory_xact_lock_shared(hashtext('rank:' || o.org_id))
     FROM (SELECT DISTINCT i.org_id
             FROM jsonb_array_elements(p_calls) AS c(call)
             JOIN issues i ON i.org_id = c.call->>'orgId' AND i.identifier = c.call->>'identifier'
            WHERE EXISTS (SELECT 1 FROM relations r WHERE r.type = 'blocks' AND (r.source_id = i.id OR r.target_id = i.id))
            ORDER BY i.org_id) AS o;
  FOR v_index, v_call IN
    SELECT (t.ord - 1)::integer, t.call FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t(call, ord)
      LEFT JOIN issues i ON i.org_id = t.call->>'orgId' AND i.identifier = t.call->>'identifier'
     ORDER BY i.id NULLS LAST, t.ord
  LOOP
    v_results := array_append(v_results, jsonb_build_object('index', v_index) || retasc_finish(
      v_call->>'orgId', v_call->>'identifier', v_call->>'tokenHash', (v_call->>'now')::timestamptz,
      v_call->>'userId', v_call->>'keyId', v_call->>'runtime'));
  END LOOP;
  RETURN to_jsonb(v_results);
END
$$;
