import { z } from "zod";
import { connectorProviders } from "../../../db/schema/index.ts";
import { listConnectors, listConnectorsInput, revokeConnector, revokeConnectorInput } from "../../intake/connectors.ts";
import { defineTool, readOnly } from "../tool.ts";

export const connectorTools = [
  defineTool({
    name: "list_connectors",
    title: "List intake connectors",
    group: "org",
    description:
      "Lists the org's intake connectors (GitHub and GitLab repositories whose issues flow into a project): provider, " +
      "repository, target project, intake label, whether a write-back token is on file, and whether it is active. " +
      "Metadata only: secrets and tokens are never returned, and connecting a repository is done by a person in the Dash.",
    input: listConnectorsInput,
    output: z.object({
      connectors: z.array(
        z.object({
          id: z.string(),
          provider: z.enum(connectorProviders),
          repo: z.string(),
          baseUrl: z.string().nullable(),
          project: z.string().describe("the target project's prefix"),
          intakeLabel: z.string(),
          tokenOnFile: z.boolean(),
          status: z.enum(["active", "revoked"]),
          createdAt: z.string(),
          revokedAt: z.string().nullable(),
        }),
      ),
    }),
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx, input) => listConnectors(ctx, input),
  }),
  defineTool({
    name: "revoke_connector",
    title: "Revoke an intake connector",
    group: "org",
    description:
      "Disconnects an intake connector: its webhooks are refused from then on; issues it already filed stay. Needs " +
      "the owner or admin role. Idempotent: revoking a revoked connector changes nothing and says when it was revoked.",
    input: revokeConnectorInput,
    output: z.object({
      connectorId: z.string(),
      status: z.literal("revoked"),
      revokedAt: z.string(),
      changed: z.boolean().describe("false when it was already revoked"),
    }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    access: "wind-down",
    meter: { tier: "plumbing", note: "free when it was already revoked", charge: (_input, output) => (output.changed ? { tier: "plumbing", units: 1 } : null) },
    handler: (ctx, input) => revokeConnector(ctx, input),
  }),
];
