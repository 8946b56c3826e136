CREATE INDEX CONCURRENTLY "leases_unrecorded_check_idx" ON "leases" USING btree ("check_at") WHERE "leases"."ended_at" is null and "leases"."reclaim_recorded_at" is null;
