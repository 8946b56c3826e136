-- Issue 30, decision 121: a status change costs one trigger, with no WHEN clause.
-- Three row triggers ran after an update of issues.status, each behind a WHEN clause:
-- issues_count_status (0045), issues_intake_write_back (0015) and issues_terms_open (0044).
-- PostgreSQL reads a trigger's WHEN clause from its stored text and compiles it again in every
-- statement that updates the column (ExecARUpdateTriggers: stringToNode, then ExecPrepareQual),
-- and runs each trigger that passes in its own call. A claim and a finish each update the status
-- in their own statement, so every claim paid for three clauses and one call, and every finish
-- for three clauses and three calls: about 6% of PostgreSQL's CPU in a claim + finish (perf).
-- One trigger now runs one function, which asks the three questions itself. What each part does
-- is unchanged.
CREATE OR REPLACE FUNCTION retasc_issue_status_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  -- The open statuses: constants/statuses.ts's openStatuses.
  v_open CONSTANT text[] := '{todo,doing,blocked,review}';
BEGIN
  IF OLD.status IS NOT DISTINCT FROM NEW.status THEN
    RETURN NULL;
  END IF;
  -- The status counts (0045): folded by the sweep, read by the scrape.
  INSERT INTO issue_count_changes (from_status, to_status, n) VALUES (OLD.status, NEW.status, 1);
  -- The duplicate gate's terms follow whether the issue is open (0044).
  IF (OLD.status = ANY (v_open)) IS DISTINCT FROM (NEW.status = ANY (v_open)) THEN
    UPDATE issue_terms SET open = NEW.status = ANY (v_open) WHERE issue_id = NEW.id;
  END IF;
  -- A synced issue that became done or canceled closes its source (0015). Intake marks the
  -- link's source closed before it cancels an issue the source closed, so nothing is written
  -- back then.
  IF NEW.status IN ('done', 'canceled') AND EXISTS (SELECT 1 FROM intake_links l WHERE l.issue_id = NEW.id AND l.source_open) THEN
    INSERT INTO outbox (job, payload, org_id)
    VALUES ('intake.write_back', jsonb_build_object('orgId', NEW.org_id, 'issueId', NEW.id), NEW.org_id);
    PERFORM pg_notify('retasc_outbox', '');
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER issues_status_changed AFTER UPDATE OF status ON issues FOR EACH ROW
  EXECUTE FUNCTION retasc_issue_status_changed();--> statement-breakpoint
DROP TRIGGER issues_count_status ON issues;--> statement-breakpoint
DROP TRIGGER issues_intake_write_back ON issues;--> statement-breakpoint
DROP TRIGGER issues_terms_open ON issues;--> statement-breakpoint
DROP FUNCTION retasc_issue_counts_status();--> statement-breakpoint
DROP FUNCTION retasc_intake_write_back();--> statement-breakpoint
DROP FUNCTION retasc_issue_terms_open();--> statement-breakpoint
-- The batch of claims puts each claim's result together once. A claim's result (its issue's
-- view, reads and discussion) was copied whole by each of three concatenations: the call's
-- index, its active claims and its wave. Those now gather in a small object per call, joined to
-- the result once at the end. Its statements keep one generic plan, as the functions it calls do:
-- under the default plan cache mode they were planned again on every call (perf).
CREATE OR REPLACE FUNCTION retasc_next_issues(p_calls jsonb) RETURNS jsonb LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  v_index integer;
  v_call jsonb;
  v_result jsonb;
  v_project_ids text[];
  -- An array variable grows in place; appending to a jsonb value would copy it every call.
  v_results jsonb[] := '{}';
  -- What the batch adds to each result (its index, active claims and wave), by the result's place.
  v_extras jsonb[] := '{}';
  -- Each result's call, by the result's place in v_results.
  v_calls jsonb[] := '{}';
  -- Each claim's lanes as text (the key of its wave), by the result's place; null for a call
  -- that took nothing.
  v_lanes text[] := '{}';
  v_n integer;
  v_claimed boolean;
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
    v_claimed := v_result->>'outcome' = 'claimed' AND NOT v_result ? 'quarantined';
    v_results := array_append(v_results, v_result);
    v_calls := array_append(v_calls, v_call);
    v_lanes := array_append(v_lanes, CASE WHEN v_claimed
      THEN jsonb_build_array(v_call->'orgId', v_call->'projectId', v_call->'projectIds', v_call->'userId', v_call->'allLanes')::text END);
    v_extras := array_append(v_extras, CASE
      WHEN v_claimed THEN jsonb_build_object('index', v_index,
        'activeClaims', CASE WHEN (v_result->>'otherClaims')::integer > 0 AND v_call->>'sessionId' IS NOT NULL
                             THEN retasc_session_claims(v_call->>'sessionId', v_call->>'keyId', (v_call->>'now')::timestamptz, v_result->'issue'->>'id')
                             ELSE '[]' END)
      WHEN v_result->>'outcome' = 'empty' THEN jsonb_build_object('index', v_index,
        'activeClaims', CASE WHEN v_call->>'sessionId' IS NOT NULL
                             THEN retasc_session_claims(v_call->>'sessionId', v_call->>'keyId', (v_call->>'now')::timestamptz, NULL) ELSE '[]' END)
      ELSE jsonb_build_object('index', v_index) END);
  END LOOP;
  -- The wave, once every claim of the batch is taken: one read per set of lanes (the org, the
  -- project key's project, the member's projects, the person, all lanes or not), shared by the
  -- batch's claims in those lanes, none of whose issues it names.
  FOR v_n IN 1 .. cardinality(v_results) LOOP
    IF v_lanes[v_n] IS NOT NULL THEN
      IF NOT v_waves ? v_lanes[v_n] THEN
        v_call := v_calls[v_n];
        v_project_ids := CASE WHEN jsonb_typeof(v_call->'projectIds') = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(v_call->'projectIds')) END;
        v_waves := v_waves || jsonb_build_object(v_lanes[v_n],
          retasc_next_wave(v_call->>'orgId', v_call->>'projectId', v_project_ids, v_call->>'userId', (v_call->>'allLanes')::boolean,
                           (v_call->>'now')::timestamptz));
      END IF;
      v_extras[v_n] := v_extras[v_n] || jsonb_build_object('wave', v_waves->v_lanes[v_n]);
    END IF;
    v_results[v_n] := v_results[v_n] || v_extras[v_n];
  END LOOP;
  RETURN to_jsonb(v_results);
END
$$;
