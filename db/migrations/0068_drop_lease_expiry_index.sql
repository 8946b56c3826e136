DROP INDEX CONCURRENTLY "leases_unrecorded_idx";
