-- Room on each page of leases for the renewals and the end of the leases inserted there (decision 097).
ALTER TABLE "leases" SET (fillfactor = 85);
