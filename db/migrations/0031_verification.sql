CREATE TABLE "key_riders" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"key_id" text NOT NULL,
	"text_enc" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "verification_reports" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"issue_id" text NOT NULL,
	"commit" text,
	"check" text NOT NULL,
	"conclusion" text NOT NULL,
	"url" text,
	"source" text NOT NULL,
	"actor_id" text,
	"key_id" text,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "agent_keys" ADD COLUMN "ci" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "agent_keys" ADD COLUMN "rider_waiting" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "verification_mode" text DEFAULT 'off' NOT NULL;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "verification_checks" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "verification_window_minutes" integer DEFAULT 120 NOT NULL;--> statement-breakpoint
ALTER TABLE "issues" ADD COLUMN "verification" text;--> statement-breakpoint
ALTER TABLE "issues" ADD COLUMN "verification_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "issues" ADD COLUMN "verification_stale_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "issues" ADD COLUMN "evidence_commit" text;--> statement-breakpoint
ALTER TABLE "issues" ADD COLUMN "evidence_branch" text;--> statement-breakpoint
ALTER TABLE "issues" ADD COLUMN "evidence_pr" text;--> statement-breakpoint
ALTER TABLE "key_riders" ADD CONSTRAINT "key_riders_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "key_riders" ADD CONSTRAINT "key_riders_key_id_agent_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."agent_keys"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "verification_reports" ADD CONSTRAINT "verification_reports_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "verification_reports" ADD CONSTRAINT "verification_reports_issue_id_issues_id_fk" FOREIGN KEY ("issue_id") REFERENCES "public"."issues"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "key_riders_key_idx" ON "key_riders" USING btree ("key_id","created_at");--> statement-breakpoint
CREATE INDEX "verification_reports_issue_idx" ON "verification_reports" USING btree ("issue_id","created_at");--> statement-breakpoint
CREATE INDEX "issues_evidence_commit_idx" ON "issues" USING btree ("org_id","evidence_commit") WHERE "issues"."evidence_commit" is not null;--> statement-breakpoint
CREATE INDEX "issues_evidence_branch_idx" ON "issues" USING btree ("org_id","evidence_branch") WHERE "issues"."evidence_branch" is not null;--> statement-breakpoint

-- retasc_finish as in 0010, falling back for an issue of a project with verification on: that
-- finish needs evidence and leaves its dependents blocked, which the general path does (decision 045).
CREATE OR REPLACE FUNCTION retasc_finish(p_org_id text, p_identifier text, p_token_hash text, p_now timestamptz,
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
