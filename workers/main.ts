/** `npm run workers`: a process that runs background jobs (see workers/process.ts). */
import { runWorkerProcess } from "./process.ts";

await runWorkerProcess();
