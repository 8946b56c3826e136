import { z } from "zod";
import { systemPrincipal, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { deleteOrg } from "../orgs/delete.ts";

export const deleteOrgCommandInput = z.object({ org: z.string().trim().min(1, "--org is required") });

/**
 * `delete-org`: the operator deletes an org as its owner would (server/orgs/delete.ts), with no
 * name to type. The data key is gone when this returns; the rows go when a runner (the server
 * or `npm run workers`) takes the `org.purge` job.
 */
export function deleteOrgCommand(services: Services, input: z.infer<typeof deleteOrgCommandInput>) {
  return deleteOrg(withPrincipal(services, systemPrincipal(input.org)), {});
}
