-- Issue 30: an issue's view reads only the sections that may hold rows (decision 119). The view
-- reads (0070) ran eleven subqueries for every claim and finish, most of them empty (no relations,
-- labels, children, checkpoint, comments or attachments): about a quarter of PostgreSQL's CPU per
-- claim + finish (bench/claim-cpu.ts with them stubbed out). issues.view_extras holds one bit per
-- section that may hold rows; a trigger on each table sets the bit with the issue's first such
-- row, in the same transaction, and nothing clears it (a set bit only costs the read). An issue
-- filed before this migration starts with every bit set: it reads every section, as before.
ALTER TABLE "issues" ADD COLUMN "view_extras" smallint DEFAULT 63 NOT NULL;--> statement-breakpoint
ALTER TABLE "issues" ALTER COLUMN "view_extras" SET DEFAULT 0;--> statement-breakpoint
-- The bits, one home: relations 1, labels 2, children 4, checkpoints 8, comments 16, attachments 32,
-- each trigger's argument below (children: retasc_mark_parent_view_extras). Set after each
-- statement that inserts rows, for the issues those rows belong to, only where the bit is still
-- clear: an issue's row is written once per section in its life. Relations mark both ends; the
-- issues are locked in id order, so two relations marking the same pair cannot deadlock each
-- other (a child's move, which holds the child while it marks the parent, can: decision 119).
CREATE FUNCTION retasc_mark_view_extras() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_bit smallint := TG_ARGV[0]::smallint;
BEGIN
  IF TG_TABLE_NAME = 'relations' THEN
    UPDATE issues SET view_extras = view_extras | v_bit
     WHERE id IN (SELECT i.id FROM issues i
                   WHERE i.id IN (SELECT a.source_id FROM added a UNION SELECT a.target_id FROM added a) AND i.view_extras & v_bit = 0
                   ORDER BY i.id FOR NO KEY UPDATE);
  ELSE
    UPDATE issues SET view_extras = view_extras | v_bit
     WHERE id IN (SELECT i.id FROM issues i WHERE i.id IN (SELECT a.issue_id FROM added a) AND i.view_extras & v_bit = 0 ORDER BY i.id FOR NO KEY UPDATE);
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER relations_view_extras AFTER INSERT ON relations REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION retasc_mark_view_extras(1);--> statement-breakpoint
CREATE TRIGGER issue_labels_view_extras AFTER INSERT ON issue_labels REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION retasc_mark_view_extras(2);--> statement-breakpoint
CREATE TRIGGER checkpoints_view_extras AFTER INSERT ON checkpoints REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION retasc_mark_view_extras(8);--> statement-breakpoint
CREATE TRIGGER comments_view_extras AFTER INSERT ON comments REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION retasc_mark_view_extras(16);--> statement-breakpoint
CREATE TRIGGER attachments_view_extras AFTER INSERT ON attachments REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION retasc_mark_view_extras(32);--> statement-breakpoint
-- A child marks its parent, when it is filed under it or moved there.
CREATE FUNCTION retasc_mark_parent_view_extras() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE issues SET view_extras = view_extras | 4 WHERE id = NEW.parent_id AND view_extras & 4 = 0;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER issues_parent_view_extras AFTER INSERT OR UPDATE OF parent_id ON issues
  FOR EACH ROW WHEN (NEW.parent_id IS NOT NULL) EXECUTE FUNCTION retasc_mark_parent_view_extras();--> statement-breakpoint
-- The view's reads of an issue row the caller holds: each section only when its bit is set (the
-- parent and the lease by the row's own columns); `p_lease` false leaves the lease out (a claim's
-- reply states its lease itself). The same JSON as 0070's retasc_view_reads.
CREATE FUNCTION retasc_issue_view_reads(p_issue issues, p_now timestamp with time zone, p_lease boolean)
 RETURNS json
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  v_rels json := '[]';
  v_labels json := '[]';
  v_children json := '[]';
  v_parent json;
  v_checkpoint json;
  v_lease json;
  v_people json := '[]';
BEGIN
  IF p_issue.view_extras & 1 <> 0 THEN
    SELECT coalesce(json_agg(json_build_object('type', r.type, 'sourceId', r.source_id, 'targetId', r.target_id,
                                               'identifier', o.identifier, 'status', o.status, 'projectId', o.project_id)), '[]')
      INTO v_rels
      FROM relations r JOIN issues o ON o.org_id = p_issue.org_id AND o.id = CASE WHEN r.source_id = p_issue.id THEN r.target_id ELSE r.source_id END
     WHERE r.org_id = p_issue.org_id AND (r.source_id = p_issue.id OR r.target_id = p_issue.id);
  END IF;
  IF p_issue.view_extras & 2 <> 0 THEN
    SELECT coalesce(json_agg(l.name ORDER BY l.name), '[]') INTO v_labels
      FROM issue_labels il JOIN labels l ON l.id = il.label_id WHERE il.issue_id = p_issue.id;
  END IF;
  IF p_issue.view_extras & 4 <> 0 THEN
    SELECT coalesce(json_agg(json_build_object('identifier', c.identifier, 'projectId', c.project_id) ORDER BY c.number), '[]') INTO v_children
      FROM issues c WHERE c.org_id = p_issue.org_id AND c.parent_id = p_issue.id;
  END IF;
  IF p_issue.parent_id IS NOT NULL THEN
    SELECT json_build_object('identifier', p.identifier, 'projectId', p.project_id) INTO v_parent
      FROM issues p WHERE p.org_id = p_issue.org_id AND p.id = p_issue.parent_id;
  END IF;
  IF p_issue.view_extras & 8 <> 0 THEN
    SELECT json_build_object('doneEnc', cp.done_enc, 'nextEnc', cp.next_enc, 'gotchasEnc', cp.gotchas_enc,
                             'noteEnc', cp.note_enc, 'branch', cp.branch, 'runtime', cp.runtime,
                             'userId', cp.user_id, 'createdAt', retasc_iso(cp.created_at)) INTO v_checkpoint
      FROM checkpoints cp WHERE cp.org_id = p_issue.org_id AND cp.issue_id = p_issue.id ORDER BY cp.created_at DESC, cp.id DESC LIMIT 1;
  END IF;
  IF p_lease AND p_issue.lease_id IS NOT NULL AND p_issue.lease_expires_at > p_now THEN
    SELECT json_build_object('userId', l.user_id, 'runtime', l.runtime, 'keyId', l.key_id, 'fence', l.fence,
                             'expiresAt', retasc_iso(l.expires_at),
                             'holder', CASE WHEN u.id IS NULL THEN NULL
                                            ELSE json_build_object('userId', u.id, 'email', u.email, 'name', u.name) END) INTO v_lease
      FROM leases l LEFT JOIN "user" u ON u.id = l.user_id
     WHERE l.org_id = p_issue.org_id AND l.id = p_issue.lease_id;
  END IF;
  IF p_issue.assignee_id IS NOT NULL OR p_issue.author_id IS NOT NULL THEN
    SELECT coalesce(json_agg(json_build_object('userId', u.id, 'email', u.email, 'name', u.name)), '[]') INTO v_people
      FROM "user" u WHERE u.id IN (p_issue.assignee_id, p_issue.author_id);
  END IF;
  RETURN json_build_object('rels', v_rels, 'labels', v_labels, 'children', v_children, 'parent', v_parent,
                           'checkpoint', v_checkpoint, 'lease', v_lease, 'people', v_people);
END
$function$;--> statement-breakpoint
-- A claim's discussion of an issue row the caller holds: the latest comments and attachments, each
-- read only when its bit is set. The same JSON as 0070's retasc_claim_discussion.
CREATE FUNCTION retasc_issue_discussion(p_issue issues)
 RETURNS json
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  v_comments json := '[]';
  v_comments_total bigint := 0;
  v_attachments json := '[]';
  v_attachments_total bigint := 0;
BEGIN
  IF p_issue.view_extras & 16 <> 0 THEN
    SELECT coalesce(json_agg(json_build_object('id', c.id, 'bodyEnc', c.body_enc, 'createdAt', retasc_iso(c.created_at),
                                               'runtime', c.runtime, 'name', c.name)
                             ORDER BY c.created_at DESC, c.id DESC), '[]'),
           (SELECT count(*) FROM comments cm WHERE cm.org_id = p_issue.org_id AND cm.issue_id = p_issue.id AND cm.retracted_at IS NULL)
      INTO v_comments, v_comments_total
      FROM (SELECT cm.id, cm.body_enc, cm.created_at, cm.runtime, u.name
              FROM comments cm LEFT JOIN "user" u ON u.id = cm.author_id
             WHERE cm.org_id = p_issue.org_id AND cm.issue_id = p_issue.id AND cm.retracted_at IS NULL
             ORDER BY cm.created_at DESC, cm.id DESC LIMIT 5) c;
  END IF;
  IF p_issue.view_extras & 32 <> 0 THEN
    SELECT coalesce(json_agg(json_build_object('id', a.id, 'urlEnc', a.url_enc, 'titleEnc', a.title_enc,
                                               'contentType', a.content_type, 'size', a.size_bytes)
                             ORDER BY a.created_at DESC, a.id DESC), '[]'),
           (SELECT count(*) FROM attachments at WHERE at.org_id = p_issue.org_id AND at.issue_id = p_issue.id AND at.obsoleted_at IS NULL)
      INTO v_attachments, v_attachments_total
      FROM (SELECT at.id, at.url_enc, at.title_enc, at.created_at, f.content_type, f.size_bytes
              FROM attachments at LEFT JOIN attachment_files f ON f.attachment_id = at.id
             WHERE at.org_id = p_issue.org_id AND at.issue_id = p_issue.id AND at.obsoleted_at IS NULL
             ORDER BY at.created_at DESC, at.id DESC LIMIT 5) a;
  END IF;
  RETURN json_build_object('comments', v_comments, 'commentsTotal', v_comments_total,
                           'attachments', v_attachments, 'attachmentsTotal', v_attachments_total);
END
$function$;--> statement-breakpoint
-- The doors by id (server/issues/views.ts, server/queue/claim-discussion.ts) read the row, then as above.
CREATE OR REPLACE FUNCTION public.retasc_view_reads(p_issue_id text, p_now timestamp with time zone, p_org_id text)
 RETURNS json
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  v_row issues;
BEGIN
  SELECT * INTO v_row FROM issues WHERE org_id = p_org_id AND id = p_issue_id;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  RETURN retasc_issue_view_reads(v_row, p_now, true);
END
$function$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.retasc_claim_discussion(p_issue_id text, p_org_id text)
 RETURNS json
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  v_row issues;
BEGIN
  SELECT * INTO v_row FROM issues WHERE org_id = p_org_id AND id = p_issue_id;
  RETURN retasc_issue_discussion(v_row);
END
$function$;--> statement-breakpoint
-- The claim and the finish pass the row they hold; every other statement is as in 0080.
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
  RETURN jsonb_build_object('issue', retasc_view_row(v_row), 'reads', retasc_issue_view_reads(v_row, v_now, false),
                            'now', retasc_iso(v_now),
                            'discussion', retasc_issue_discussion(v_row), 'notices', v_notices);
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
  RETURN jsonb_build_object('outcome', 'finished', 'issue', retasc_view_row(v_row), 'reads', retasc_issue_view_reads(v_row, p_now, true),
    'notices', v_notices || jsonb_build_object('channel', 'retasc_events',
        'payload', json_build_object('orgId', p_org_id, 'kind', 'issue.updated', 'issueId', v_row.id,
                                     'identifier', v_row.identifier, 'status', 'done')::text));
END
$function$;
