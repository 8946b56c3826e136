import { z } from "zod";
import { connectorProviders, memberRoles } from "../../../db/schema/index.ts";
import { listConnectors, listConnectorsInput, revokeConnector, revokeConnectorInput } from "../../intake/connectors.ts";
import {
  listMembers,
  listMembersInput,
  memberIdInput,
  reactivateMember,
  retireMember,
  suspendMember,
} from "../../orgs/members.ts";
import { defineTool, idempotentDestructiveWrite, idempotentWrite, readOnly } from "../tool.ts";

const personOutput = z.object({
  kind: z.literal("human"),
  memberId: z.string(),
  userId: z.string(),
  name: z.string(),
  email: z.string(),
  role: z.enum(memberRoles),
  status: z.enum(["active", "suspended"]),
  joinedAt: z.string(),
});
const agentOutput = z.object({
  kind: z.literal("agent"),
  memberId: z.string().describe("the agent key's id"),
  runtime: z.string(),
  keyPrefix: z.string(),
  userId: z.string().describe("the human this agent acts for"),
  humanName: z.string(),
  humanEmail: z.string(),
  projectId: z.string().nullable(),
  projectPrefix: z.string().nullable(),
  status: z.enum(["active", "retired"]),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
});

export const memberTools = [
  defineTool({
    name: "list_members",
    title: "List members",
    group: "org",
    description:
      "The org's people (with role and status) and agents (each agent key: runtime, the human it acts for, its " +
      "project, last use). query filters by name, email, role, runtime or key prefix; retired agents are left out " +
      "unless includeRetired. Use the emails as assignee values and the memberIds for the admin tools.",
    input: listMembersInput,
    output: z.object({ members: z.array(z.union([personOutput, agentOutput])) }),
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx, input) => listMembers(ctx, input),
  }),
  defineTool({
    name: "suspend_member",
    title: "Suspend a person",
    group: "org",
    description:
      "Suspends a person (memberId of a human) and retires every agent key they run, at once. Owner or admin; an " +
      "admin acts on ordinary members only. Refuses suspending yourself and the last active owner. Reversible with " +
      "reactivate_member (their keys stay retired). Idempotent.",
    input: memberIdInput,
    output: z.object({
      memberId: z.string(),
      status: z.literal("suspended"),
      retiredAgents: z.number().int(),
      changed: z.boolean(),
    }),
    annotations: idempotentDestructiveWrite,
    access: "wind-down",
    meter: { tier: "plumbing" },
    handler: (ctx, input) => suspendMember(ctx, input),
  }),
  defineTool({
    name: "reactivate_member",
    title: "Reactivate a person",
    group: "org",
    description:
      "Reactivates a suspended person (memberId of a human). Owner or admin. Their old agent keys stay retired; " +
      "they mint new ones. Idempotent.",
    input: memberIdInput,
    output: z.object({ memberId: z.string(), status: z.literal("active"), changed: z.boolean() }),
    annotations: idempotentWrite,
    access: "write",
    meter: { tier: "plumbing" },
    handler: (ctx, input) => reactivateMember(ctx, input),
  }),
  defineTool({
    name: "retire_member",
    title: "Retire an agent",
    group: "org",
    description:
      "Retires an agent (memberId of an agent key): the key stops working at once, for good; there is no " +
      "reactivation for agents. Anyone retires their own; owners any agent, admins those of ordinary members. People are " +
      "suspended, not retired. Idempotent.",
    input: memberIdInput,
    output: z.object({ memberId: z.string(), status: z.literal("retired"), changed: z.boolean() }),
    annotations: idempotentDestructiveWrite,
    access: "wind-down",
    meter: { tier: "plumbing" },
    handler: (ctx, input) => retireMember(ctx, input),
  }),
];

export const connectorTools = [
  defineTool({
    name: "list_connectors",
    title: "List intake connectors",
    group: "org",
    description:
      "Lists the org's intake connectors (GitHub and GitLab repositories meant to feed issues into a project): " +
      "provider, repository, target project, intake label, whether a write-back token is on file, and whether it is " +
      "active. Metadata only: secrets and tokens are never returned. Intake is not built yet: nothing connects a " +
      "repository, so the list is empty until it lands.",
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
      "Marks an intake connector revoked (see list_connectors: intake is not built yet). Needs " +
      "the owner or admin role. Idempotent: revoking a revoked connector changes nothing and says when it was revoked.",
    input: revokeConnectorInput,
    output: z.object({
      connectorId: z.string(),
      status: z.literal("revoked"),
      revokedAt: z.string(),
      changed: z.boolean().describe("false when it was already revoked"),
    }),
    annotations: idempotentDestructiveWrite,
    access: "wind-down",
    meter: { tier: "plumbing", charge: (_input, output) => (output.changed ? { tier: "plumbing", units: 1 } : null) },
    handler: (ctx, input) => revokeConnector(ctx, input),
  }),
];
