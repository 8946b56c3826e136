CREATE TABLE "project_prefix_aliases" (
	"org_id" text NOT NULL,
	"prefix" text NOT NULL,
	"project_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "project_prefix_aliases_org_id_prefix_pk" PRIMARY KEY("org_id","prefix")
);
--> statement-breakpoint
ALTER TABLE "project_prefix_aliases" ADD CONSTRAINT "project_prefix_aliases_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "project_prefix_aliases" ADD CONSTRAINT "project_prefix_aliases_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "project_prefix_aliases_project_idx" ON "project_prefix_aliases" USING btree ("project_id");--> statement-breakpoint
-- An issue's identifier as it reads now (decision 089): OLD-42, where OLD is a prefix a project of
-- the org had before a rename, comes back as that project's NEW-42; anything else comes back as
-- given. Every lookup of an issue by a caller's identifier compares with this, so an old
-- identifier names the same issue at every door. A plain SQL function the planner inlines: the
-- comparison stays a probe of issues_org_identifier_uq, plus one of this small table's key.
CREATE FUNCTION retasc_identifier(p_org_id text, p_identifier text) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT coalesce(
    (SELECT p.prefix || substr(p_identifier, length(a.prefix) + 1)
       FROM project_prefix_aliases a JOIN projects p ON p.id = a.project_id
      WHERE a.org_id = p_org_id AND a.prefix = split_part(p_identifier, '-', 1)),
    p_identifier)
$$;
