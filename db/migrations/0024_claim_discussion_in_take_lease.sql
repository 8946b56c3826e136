-- What a claim carries of an issue's discussion (server/queue/claim-discussion.ts) is read inside
-- retasc_take_lease, so a claim is one round trip again: the latest five live comments and the
-- latest five live attachments, newest first, each list with how many there are in all. These
-- limits are the only copy; claim-discussion.ts decrypts, cuts and says what was left out.
-- retasc_take_lease is 0006's but for its result's `discussion`.
CREATE FUNCTION retasc_claim_discussion(p_issue_id text) RETURNS json LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
BEGIN
  RETURN json_build_object(
    'comments', (SELECT coalesce(json_agg(json_build_object('id', c.id, 'bodyEnc', c.body_enc, 'createdAt', retasc_iso(c.created_at),
                                                          'runtime', c.runtime, 'name', c.name)
                                        ORDER BY c.created_at DESC, c.id DESC), '[]')
                   FROM (SELECT cm.id, cm.body_enc, cm.created_at, cm.runtime, u.name
                           FROM comments cm LEFT JOIN "user" u ON u.id = cm.author_id
                          WHERE cm.issue_id = p_issue_id AND cm.retracted_at IS NULL
                          ORDER BY cm.created_at DESC, cm.id DESC LIMIT 5) c),
    'commentsTotal', (SELECT count(*) FROM comments cm WHERE cm.issue_id = p_issue_id AND cm.retracted_at IS NULL),
    'attachments', (SELECT coalesce(json_agg(json_build_object('id', a.id, 'urlEnc', a.url_enc, 'titleEnc', a.title_enc,
                                                             'contentType', a.content_type, 'size', a.size_bytes)
                                           ORDER BY a.created_at DESC, a.id DESC), '[]')
                      FROM (SELECT at.id, at.url_enc, at.title_enc, at.created_at, f.content_type, f.size_bytes
                              FROM attachments at LEFT JOIN attachment_files f ON f.attachment_id = at.id
                             WHERE at.issue_id = p_issue_id AND at.obsoleted_at IS NULL
                             ORDER BY at.created_at DESC, at.id DESC LIMIT 5) a),
    'attachmentsTotal', (SELECT count(*) FROM attachments at WHERE at.issue_id = p_issue_id AND at.obsoleted_at IS NULL));
END
$$;
--> statement-breakpoint

CREATE OR REPLACE FUNCTION retasc_take_lease(p_issue_id text, p_org_id text, p_user_id text, p_key_id text, p_runtime text,
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
                            'discussion', retasc_claim_discussion(p_issue_id), 'notices', v_notices);
END
$$;
