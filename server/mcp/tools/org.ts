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
import { claimGhosts, claimGhostsInput } from "../../transfer/linear/index.ts";
import { dismissGhostPrompt, listClaimableGhosts } from "../../transfer/pipeline/ghost-prompt.ts";
import { additiveWrite, defineTool, idempotentDestructiveWrite, idempotentWrite, readOnly } from "../tool.ts";

const personOutput = z.object({
  kind: z.literal("human"),
  memberId: z.string(),
  userId: z.string(),
  name: z.string(),
  email: z.string(),
  role: z.enum(memberRoles),
  status: z.enum(["active", "suspended"]),
  projectIds: z.array(z.string()).nullable(),
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
      "Call to find people and agent keys (query: name, email, role, runtime or key prefix); paged. Emails " +
      "serve as assignees, memberIds in the admin tools.",
    input: listMembersInput,
    output: z.object({ members: z.array(z.union([personOutput, agentOutput])), nextCursor: z.string().optional() }),
    annotations: readOnly,
    handler: (ctx, input) => listMembers(ctx, input),
  }),
  defineTool({
    name: "suspend_member",
    title: "Suspend a person",
    group: "org",
    description:
      "Call (owner or admin; admins on members only) to cut a person off (a human's memberId): suspends " +
      "them and retires their agent keys; reactivate_member undoes all but the keys.",
    input: memberIdInput,
    output: z.object({
      memberId: z.string(),
      status: z.literal("suspended"),
      retiredAgents: z.number().int(),
      changed: z.boolean(),
    }),
    annotations: idempotentDestructiveWrite,
    handler: (ctx, input) => suspendMember(ctx, input),
  }),
  defineTool({
    name: "reactivate_member",
    title: "Reactivate a person",
    group: "org",
    description:
      "Call (owner or admin) to undo suspend_member. Their old agent keys stay retired; they mint new ones.",
    input: memberIdInput,
    output: z.object({ memberId: z.string(), status: z.literal("active"), changed: z.boolean() }),
    annotations: idempotentWrite,
    handler: (ctx, input) => reactivateMember(ctx, input),
  }),
  defineTool({
    name: "retire_member",
    title: "Retire an agent",
    group: "org",
    description:
      "Call to end an agent key (an agent's memberId) for good: anyone their own, owners any agent, admins " +
      "members'. People are suspended instead.",
    input: memberIdInput,
    output: z.object({ memberId: z.string(), status: z.literal("retired"), changed: z.boolean() }),
    annotations: idempotentDestructiveWrite,
    handler: (ctx, input) => retireMember(ctx, input),
  }),
  defineTool({
    name: "list_claimable_ghosts",
    title: "List your imported placeholders",
    group: "org",
    description:
      "Call on GHOSTS_UNCLAIMED: the placeholders an import made that carry your human's email. Ask them which " +
      "is them.",
    input: z.object({}),
    output: z.object({
      ghosts: z.array(
        z.object({
          ghostId: z.string(),
          name: z.string(),
          source: z.string(),
          importedAt: z.string(),
          dismissed: z.boolean().describe("your human said it is not them: not offered"),
        }),
      ),
      next: z.string(),
    }),
    annotations: readOnly,
    handler: (ctx) => listClaimableGhosts(ctx),
  }),
  defineTool({
    name: "claim_ghost",
    title: "Claim your imported history",
    group: "org",
    description:
      "Call once your human says a placeholder is them: its history becomes theirs. Without ghostId, every one " +
      "offered.",
    input: claimGhostsInput,
    output: z.object({
      claimed: z.array(z.string()).describe("the placeholders' ids now yours"),
      claimedBy: z.string().describe("your user id, which their history now names"),
    }),
    annotations: additiveWrite,
    handler: (ctx, input) => claimGhosts(ctx, input),
    landsIn: () => "org",
  }),
  defineTool({
    name: "dismiss_ghost_prompt",
    title: "Dismiss the placeholders offered",
    group: "org",
    description: "Call when your human says none of the placeholders offered is them: not offered again.",
    input: z.object({}),
    output: z.object({ dismissed: z.array(z.string()).describe("the placeholders' ids"), next: z.string() }),
    annotations: idempotentWrite,
    handler: (ctx) => dismissGhostPrompt(ctx),
  }),
];

export const connectorTools = [
  defineTool({
    name: "list_connectors",
    title: "List intake connectors",
    group: "org",
    description:
      "Call to see which GitHub or GitLab repositories feed issues into which projects: the org's intake " +
      "connectors, never their secrets.",
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
    handler: (ctx, input) => listConnectors(ctx, input),
  }),
  defineTool({
    name: "revoke_connector",
    title: "Revoke an intake connector",
    group: "org",
    description:
      "Call (owner or admin) to stop an intake connector: its webhooks are refused from then on. A revoked one says " +
      "when.",
    input: revokeConnectorInput,
    output: z.object({
      connectorId: z.string(),
      status: z.literal("revoked"),
      revokedAt: z.string(),
      changed: z.boolean().describe("false when it was already revoked"),
    }),
    annotations: idempotentDestructiveWrite,
    handler: (ctx, input) => revokeConnector(ctx, input),
  }),
];
