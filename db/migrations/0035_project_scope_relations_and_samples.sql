ALTER TABLE "fleet_hours" DROP CONSTRAINT "fleet_hours_org_id_hour_pk";--> statement-breakpoint
ALTER TABLE "fleet_hours" ADD COLUMN "project_id" text;--> statement-breakpoint
ALTER TABLE "fleet_hours" ADD CONSTRAINT "fleet_hours_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "fleet_hours" ADD CONSTRAINT "fleet_hours_org_hour_project_uq" UNIQUE NULLS NOT DISTINCT("org_id","hour","project_id");--> statement-breakpoint
-- Samples are now per project (decision 042: a scoped member's Fleet counts their projects).
-- The org-wide rows stay as history for unscoped viewers; the current hour's org-wide depth is
-- dropped so this hour's per-project samples do not count its issues twice.
UPDATE "fleet_hours" SET "depth" = NULL WHERE "hour" >= date_trunc('hour', now());
--> statement-breakpoint

-- An issue view's relations, parent and children name their project, so the reader drops those
-- outside the caller's scope (server/issues/views.ts viewReadsFrom; decision 042). Every caller
-- of this function (views, retasc_take_lease's claim reply, retasc_finish) goes through it.
CREATE OR REPLACE FUNCTION retasc_view_reads(p_issue_id text, p_now timestamptz) RETURNS json LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
BEGIN
  RETURN (SELECT json_build_object(
    'rels', (SELECT coalesce(json_agg(json_build_object('type', r.type, 'sourceId', r.source_id, 'targetId', r.target_id,
                                                       'identifier', o.identifier, 'status', o.status, 'projectId', o.project_id)), '[]')
               FROM relations r JOIN issues o ON o.id = CASE WHEN r.source_id = i.id THEN r.target_id ELSE r.source_id END
              WHERE r.source_id = i.id OR r.target_id = i.id),
    'labels', (SELECT coalesce(json_agg(l.name ORDER BY l.name), '[]')
                 FROM issue_labels il JOIN labels l ON l.id = il.label_id WHERE il.issue_id = i.id),
    'children', (SELECT coalesce(json_agg(json_build_object('identifier', c.identifier, 'projectId', c.project_id) ORDER BY c.number), '[]')
                   FROM issues c WHERE c.parent_id = i.id),
    'parent', (SELECT json_build_object('identifier', p.identifier, 'projectId', p.project_id) FROM issues p WHERE p.id = i.parent_id),
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
