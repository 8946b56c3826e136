-- retasc_finishes as in 0010, but before any finish it locks every issue its finishes unblock, in
-- id order. Each finish takes one open blocker away from the issues it blocks; finishing in issue
-- order, two batches could reach the same two blocked issues in opposite orders and deadlock
-- (server/issues/finish-order.test.ts). A lone finish locks its blocked issues in one statement,
-- in index order, as before.
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
  IF jsonb_array_length(p_calls) > 1 THEN
    PERFORM 1 FROM issues t
     WHERE t.id IN (SELECT r.target_id
                      FROM jsonb_array_elements(p_calls) AS c(call)
                      JOIN issues i ON i.org_id = c.call->>'orgId' AND i.identifier = c.call->>'identifier'
                      JOIN relations r ON r.source_id = i.id AND r.type = 'blocks')
     ORDER BY t.id FOR NO KEY UPDATE;
  END IF;
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
