-- Decision 043: exporting the org is the owners'; an owner may let admins export it too.
ALTER TABLE "orgs" ADD COLUMN "admins_may_export" boolean DEFAULT false NOT NULL;