import { z } from "zod";
import { memberRoles } from "../../../db/schema/index.ts";
import { mintSessionKey, mintSessionKeyInput, whoami } from "../../orgs/session.ts";
import { additiveWrite, defineTool, readOnly } from "../tool.ts";

const whoamiOutput = z.object({
  kind: z.enum(["agent", "human", "system"]),
  human: z.object({ userId: z.string(), email: z.string(), name: z.string(), role: z.enum(memberRoles) }),
  org: z.object({ id: z.string(), name: z.string(), timeZone: z.string() }),
  project: z.object({ id: z.string(), prefix: z.string(), name: z.string() }).nullable(),
  key: z
    .object({
      id: z.string(),
      prefix: z.string().describe("the visible start of your key"),
      runtime: z.string().nullable(),
      parentKeyId: z.string().nullable(),
      expiresAt: z.string().nullable(),
      claimCap: z.number().int().describe("most live claims this key may hold at once"),
    })
    .nullable(),
  leaseTtlSeconds: z.number().int().describe("how long a claim lives without a heartbeat or checkpoint"),
  pendingInvites: z
    .array(z.object({ inviteId: z.string(), orgName: z.string(), role: z.enum(memberRoles), expiresAt: z.string() }))
    .describe("other orgs' invites to your human: accept_invite, once they say yes"),
});

export const identityTools = [
  defineTool({
    name: "whoami",
    title: "Who am I",
    group: "identity",
    description:
      "Call first: who you act for (your human, their role), the org, your key's project and limits, " +
      "pending invites.",
    input: z.object({}),
    output: whoamiOutput,
    annotations: readOnly,
    handler: (ctx) => whoami(ctx),
  }),
  defineTool({
    name: "mint_session_key",
    title: "Mint a session key",
    group: "identity",
    description:
      "Call at session start if sessions share an agent key, to tell them apart (label) in the activity log: a new " +
      "Bearer key of your identity, shown once, expiring in a day or with its parent. Not from OAuth.",
    input: mintSessionKeyInput,
    output: z.object({
      key: z.string().describe("the new secret (rtsc_...), shown only this once"),
      keyId: z.string(),
      runtime: z.string(),
      parentKeyId: z.string(),
      projectId: z.string().nullable(),
      expiresAt: z.string(),
    }),
    annotations: additiveWrite,
    handler: (ctx, input) => mintSessionKey(ctx, input),
  }),
];
