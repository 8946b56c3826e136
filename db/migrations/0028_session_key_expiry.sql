-- Decision 037: a credential lives no longer than its grant.
-- Session keys expire (expires_at; null: a key that lives until revoked).
ALTER TABLE "agent_keys" ADD COLUMN "expires_at" timestamp with time zone;--> statement-breakpoint
-- Every session key minted below an OAuth grant's key came through one of its access tokens (the
-- grant key's secret is never shown) and would outlive the grant: revoked now, however deep.
WITH RECURSIVE tree(id) AS (
  SELECT k.id FROM agent_keys k JOIN oauth_grants g ON g.key_id = k.parent_key_id
  UNION
  SELECT k.id FROM agent_keys k JOIN tree ON k.parent_key_id = tree.id
)
UPDATE agent_keys SET revoked_at = now() WHERE revoked_at IS NULL AND id IN (SELECT id FROM tree);--> statement-breakpoint
-- The live session keys of other keys get the longest life a new one gets (SESSION_KEY_TTL_SECONDS' default).
UPDATE agent_keys SET expires_at = now() + interval '24 hours' WHERE parent_key_id IS NOT NULL AND revoked_at IS NULL AND expires_at IS NULL;
