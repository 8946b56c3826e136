/** A worker process for tests: `npm run workers` plus the probe job. */
import { mergeCatalogs, retascJobs } from "../catalog.ts";
import { runWorkerProcess } from "../process.ts";
import { probeJobs } from "./probe.ts";

await runWorkerProcess({ catalog: mergeCatalogs(retascJobs, probeJobs) });
