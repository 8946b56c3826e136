-- Credit accounting as functions (docs/decisions/016-credit-slices.md): the one home of the
-- charging rule. The TypeScript services call retasc_charge inside their write's transaction
-- (server/billing/charge.ts); the dispatch functions call it themselves, so a claim or a
-- finish stays one statement. An org's credit sits in 16 slices (billing_credit_slices): a
-- charge locks one that covers it, skipping slices other charges hold, so charges of one org
-- run side by side; every slice change is made under its row lock and never leaves it below
-- zero. retasc_charge returns 'charged', 'waived' (a wind-down write with too little credit:
-- a ledger row of 0), 'BILLING_INACTIVE' or 'SPEND_CAP' (refused, having written nothing).

-- The first instant of the month p_now falls in, in the org's time zone.
CREATE FUNCTION retasc_billing_month_start(p_org_id text, p_now timestamptz) RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT date_trunc('month', p_now AT TIME ZONE o.time_zone) AT TIME ZONE o.time_zone FROM orgs o WHERE o.id = p_org_id
$$;
--> statement-breakpoint

-- When no slice alone covers p_amount but the slices together do: locks them all (in slice
-- order) and spreads the credit over as many slices as each hold a dispatch charge (at least
-- one), given and bought kept apart. Returns the slice with the most (0), locked; null when
-- the credit does not cover p_amount (having changed nothing).
CREATE FUNCTION retasc_consolidate_credit(p_org_id text, p_amount bigint) RETURNS integer LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_given bigint;
  v_bought bigint;
  v_k integer;
BEGIN
  PERFORM 1 FROM billing_credit_slices WHERE org_id = p_org_id ORDER BY slice FOR UPDATE;
  SELECT coalesce(sum(given_remaining), 0), coalesce(sum(bought_remaining), 0) INTO v_given, v_bought
    FROM billing_credit_slices WHERE org_id = p_org_id;
  IF v_given + v_bought < p_amount THEN
    RETURN NULL;
  END IF;
  v_k := greatest(1, least(16, (v_given + v_bought) / greatest(p_amount, 7000)))::integer;
  UPDATE billing_credit_slices
     SET given_remaining = CASE WHEN slice < v_k THEN v_given / v_k + CASE WHEN slice < v_given % v_k THEN 1 ELSE 0 END ELSE 0 END,
         bought_remaining = CASE WHEN slice < v_k THEN v_bought / v_k + CASE WHEN slice < v_bought % v_k THEN 1 ELSE 0 END ELSE 0 END
   WHERE org_id = p_org_id;
  RETURN 0;
END
$$;
--> statement-breakpoint

-- Charges one accepted write: checks the monthly cap (unless wind-down), takes p_amount from a
-- slice that covers it (its given credit first) and writes the ledger row. Refused (returns
-- the code, writes nothing) when a refusable write finds too little credit or the cap reached.
CREATE FUNCTION retasc_charge(p_org_id text, p_user_id text, p_key_id text, p_runtime text, p_tool text, p_tier text,
                              p_amount bigint, p_issue_id text, p_refusable boolean, p_now timestamptz)
RETURNS text LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_month timestamptz := retasc_billing_month_start(p_org_id, p_now);
  v_start integer := floor(random() * 16)::integer;
  v_cap bigint;
  v_slice integer;
  v_charged bigint := p_amount;
BEGIN
  IF p_refusable THEN
    -- Read without locks: concurrent charges can pass the cap by what they charge together.
    SELECT a.monthly_cap_micro_credits INTO v_cap FROM billing_accounts a WHERE a.org_id = p_org_id;
    IF v_cap IS NOT NULL AND p_amount + (SELECT coalesce(sum(s.month_spent), 0) FROM billing_credit_slices s
                                          WHERE s.org_id = p_org_id AND s.month_start = v_month) > v_cap THEN
      RETURN 'SPEND_CAP';
    END IF;
  END IF;
  -- A slice that covers the charge, from a random start, skipping those other charges hold;
  -- then, if each of those is held, waiting for one; then consolidating.
  SELECT s.slice INTO v_slice FROM billing_credit_slices s
   WHERE s.org_id = p_org_id AND s.given_remaining + s.bought_remaining >= p_amount
   ORDER BY (s.slice + 16 - v_start) % 16 LIMIT 1 FOR UPDATE SKIP LOCKED;
  IF v_slice IS NULL THEN
    SELECT s.slice INTO v_slice FROM billing_credit_slices s
     WHERE s.org_id = p_org_id AND s.given_remaining + s.bought_remaining >= p_amount
     ORDER BY (s.slice + 16 - v_start) % 16 LIMIT 1 FOR UPDATE;
  END IF;
  IF v_slice IS NULL THEN
    v_slice := retasc_consolidate_credit(p_org_id, p_amount);
  END IF;
  IF v_slice IS NULL THEN
    IF p_refusable THEN
      RETURN 'BILLING_INACTIVE';
    END IF;
    v_charged := 0;
  ELSE
    UPDATE billing_credit_slices
       SET given_remaining = given_remaining - least(given_remaining, p_amount),
           bought_remaining = bought_remaining - (p_amount - least(given_remaining, p_amount)),
           month_spent = CASE WHEN month_start = v_month THEN month_spent + p_amount ELSE p_amount END,
           month_start = v_month
     WHERE org_id = p_org_id AND slice = v_slice;
  END IF;
  INSERT INTO billing_charges (org_id, user_id, key_id, runtime, tool, tier, micro_credits, issue_id, created_at)
  VALUES (p_org_id, p_user_id, p_key_id, p_runtime, p_tool, p_tier, v_charged, p_issue_id, p_now);
  RETURN CASE WHEN v_charged < p_amount THEN 'waived' ELSE 'charged' END;
END
$$;
--> statement-breakpoint

-- Adds credit once per (org, source, ref) (and a signup credit once per person): spread
-- over the slices. A negative amount takes credit of its kind back, as much as is left, and
-- the credit row records what it took. Returns false when the ref was already used.
CREATE FUNCTION retasc_add_credit(p_org_id text, p_kind text, p_amount bigint, p_source text, p_ref text, p_note text,
                                  p_now timestamptz)
RETURNS boolean LANGUAGE plpgsql
AS $$
DECLARE
  v_id bigint;
  v_left bigint := -p_amount;
  v_take bigint;
  v_slice record;
BEGIN
  INSERT INTO billing_credits (org_id, kind, micro_credits, source, ref, note, created_at)
  VALUES (p_org_id, p_kind, p_amount, p_source, p_ref, p_note, p_now)
  ON CONFLICT DO NOTHING
  RETURNING id INTO v_id;
  IF v_id IS NULL THEN
    RETURN false;
  END IF;
  INSERT INTO billing_credit_slices (org_id, slice) SELECT p_org_id, g FROM generate_series(0, 15) AS g ON CONFLICT DO NOTHING;
  PERFORM 1 FROM billing_credit_slices WHERE org_id = p_org_id ORDER BY slice FOR UPDATE;
  IF p_amount >= 0 THEN
    UPDATE billing_credit_slices
       SET given_remaining = given_remaining + CASE WHEN p_kind = 'given' THEN p_amount / 16 + CASE WHEN slice < p_amount % 16 THEN 1 ELSE 0 END ELSE 0 END,
           bought_remaining = bought_remaining + CASE WHEN p_kind = 'bought' THEN p_amount / 16 + CASE WHEN slice < p_amount % 16 THEN 1 ELSE 0 END ELSE 0 END
     WHERE org_id = p_org_id;
    RETURN true;
  END IF;
  FOR v_slice IN SELECT slice, CASE WHEN p_kind = 'given' THEN given_remaining ELSE bought_remaining END AS remaining
                   FROM billing_credit_slices WHERE org_id = p_org_id ORDER BY slice LOOP
    EXIT WHEN v_left = 0;
    v_take := least(v_left, v_slice.remaining);
    UPDATE billing_credit_slices
       SET given_remaining = given_remaining - CASE WHEN p_kind = 'given' THEN v_take ELSE 0 END,
           bought_remaining = bought_remaining - CASE WHEN p_kind = 'bought' THEN v_take ELSE 0 END
     WHERE org_id = p_org_id AND slice = v_slice.slice;
    v_left := v_left - v_take;
  END LOOP;
  UPDATE billing_credits SET micro_credits = p_amount + v_left WHERE id = v_id;
  RETURN true;
END
$$;
--> statement-breakpoint

-- retasc_next_issue as in 0006, charging the claim when billing is on (p_charge: {tool, tier,
-- microCredits}, or null). outcome 'billing' with the refusal's code is new.
DROP FUNCTION retasc_next_issue(text, text, boolean, boolean, integer, text, text, text, timestamptz, text, text, bigint);
--> statement-breakpoint
CREATE FUNCTION retasc_next_issue(p_org_id text, p_project_id text, p_all_lanes boolean, p_check_sla boolean, p_cap integer,
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
--> statement-breakpoint

-- retasc_finish as in 0006, charging the finish when billing is on (p_charge as above).
DROP FUNCTION retasc_finish(text, text, text, timestamptz, text, text, text);
--> statement-breakpoint
CREATE FUNCTION retasc_finish(p_org_id text, p_identifier text, p_token_hash text, p_now timestamptz,
                              p_user_id text, p_key_id text, p_runtime text, p_charge jsonb)
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
  -- Billing on: a refused charge falls back too, and the general path answers with the refusal.
  IF p_charge IS NOT NULL AND retasc_charge(p_org_id, p_user_id, p_key_id, p_runtime, p_charge->>'tool', p_charge->>'tier',
                                            (p_charge->>'microCredits')::bigint, v_row.id, true, p_now) IN ('BILLING_INACTIVE', 'SPEND_CAP') THEN
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

-- The batches pass each call's charge on.
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
      v_call->>'leaseId', v_call->>'tokenHash', (v_call->>'ttlMs')::bigint, v_call->'charge'));
  END LOOP;
  RETURN to_jsonb(v_results);
END
$$;
--> statement-breakpoint

CREATE OR REPLACE FUNCTION retasc_finishes(p_calls jsonb) RETURNS jsonb LANGUAGE plpgsql
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
      v_call->>'userId', v_call->>'keyId', v_call->>'runtime', v_call->'charge'));
  END LOOP;
  RETURN to_jsonb(v_results);
END
$$;
