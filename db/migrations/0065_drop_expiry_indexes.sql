DROP INDEX CONCURRENTLY "issues_claimable_idx";--> statement-breakpoint
DROP INDEX CONCURRENTLY "issues_org_claimable_idx";--> statement-breakpoint
DROP INDEX CONCURRENTLY "issues_held_idx";--> statement-breakpoint
DROP INDEX CONCURRENTLY "issues_lease_expiry_idx";
