import { once } from "node:events";
import type { Writable } from "node:stream";
import { z } from "zod";
import { systemPrincipal, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { exportInput, exportOrg } from "./export.ts";

export const adminExportInput = exportInput.extend({
  org: z.string({ error: "--org is required" }).trim().min(1, "--org is required"),
});

/** `npm run admin -- export` (argv parsed here, of unknown shape): the org's export written to `out` as it is read, pausing while `out` is full. */
export async function writeOrgExport(services: Services, argv: unknown, out: Writable): Promise<void> {
  const input = adminExportInput.parse(argv);
  const ctx = withPrincipal(services, systemPrincipal(input.org));
  const { chunks } = await exportOrg(ctx, input);
  for await (const chunk of chunks) {
    if (!out.write(chunk)) await once(out, "drain");
  }
}
