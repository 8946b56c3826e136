-- Issue 30: a batch of finishes looks up each call's issue by its key. retasc_finishes (0087)
-- joined its calls to issues on (org_id, identifier). The calls come from jsonb, which the planner
-- counts as 100 rows, so on a database of a few thousand issues its one generic plan hashed the
-- calls and read the whole of issues_org_identifier_uq, every org's issues, on every batch
-- (auto_explain: 1,520 rows for one call in bench/claim-loop.ts; server/queue/batch-reads.test.ts
-- counts 504 rows fetched for one finish). A lateral lookup with LIMIT 1 (identifiers are unique
-- in an org) is one index probe per call whatever the table holds. The relations probe beside it
-- names the org, as the finish's own does. Everything else is as in 0087.
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
             AND EXISTS (SELECT 1 FROM relations r WHERE r.org_id = i.org_id AND r.type = 'blocks' AND (r.source_id = i.id OR r.target_id = i.id)) AS edges
      FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t(call, ord)
      -- One key lookup a call: LIMIT keeps the planner from joining the calls to the whole table.
      LEFT JOIN LATERAL (SELECT i.id, i.org_id, i.view_extras FROM issues i
                          WHERE i.org_id = t.call->>'orgId' AND i.identifier = t.call->>'identifier' LIMIT 1) i ON true)
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
$$;
