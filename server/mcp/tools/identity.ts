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
      claimCap: z.number().int().describe("most live claims this key may hold at once"),
    })
    .nullable(),
  leaseTtlSeconds: z.number().int().describe("how long a claim lives without a heartbeat or checkpoint"),
});

export const identityTools = [
  defineTool({
    name: "whoami",
    title: "Who am I",
    group: "identity",
    description:
      "Returns who you are acting as: the human your key belongs to (and their role), the org, the project your key " +
      "is scoped to, your runtime label, your claim cap and the lease length. Call it first in every session to " +
      "confirm you are in the right org and project before pulling work.",
    input: z.object({}),
    output: whoamiOutput,
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx) => whoami(ctx),
  }),
  defineTool({
    name: "mint_session_key",
    title: "Mint a session key",
    group: "identity",
    description:
      "Mints a new agent key for this session with exactly your identity (same human, org, project, runtime and " +
      "claim cap), so concurrent sessions of one agent are told apart in claims and the activity log. The key is " +
      "returned once: keep it and send it as your Bearer token from now on. It ends with the key it came from " +
      "(revoked, rotated or retired). SESSION_KEY_CAP when your key already has as many live session keys as the " +
      "deployment allows (20 by default, counting session keys of session keys): retire the ones you no longer use.",
    input: mintSessionKeyInput,
    output: z.object({
      key: z.string().describe("the new secret (rtsc_...), shown only this once"),
      keyId: z.string(),
      runtime: z.string(),
      parentKeyId: z.string(),
      projectId: z.string().nullable(),
    }),
    annotations: additiveWrite,
    access: "write",
    meter: { tier: "plumbing" },
    handler: (ctx, input) => mintSessionKey(ctx, input),
  }),
];
