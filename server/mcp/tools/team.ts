import { z } from "zod";
import { memberRoles } from "../../../db/schema/index.ts";
import { publicBaseUrl } from "../../http/origin.ts";
import { requestScope } from "../../http/scope.ts";
import { acceptInvite } from "../../orgs/invite-redeem.ts";
import { createInviteInput, inviteIdInput, listInvites, listInvitesInput, revokeInvite } from "../../orgs/invites.ts";
import { inviteAndMail } from "../../orgs/invite-mail.ts";
import { inviteQuestions } from "../../orgs/invite-questions.ts";
import { setupStates, setupStatus } from "../../setup/status.ts";
import { additiveWrite, defineTool, idempotentDestructiveWrite, readOnly } from "../tool.ts";

export const askHumanOutput = z.object({
  question: z.string(),
  context: z.string().optional(),
  options: z.array(z.object({ value: z.string(), label: z.string(), detail: z.string().optional() })).optional(),
  multiple: z.boolean().optional().describe("more than one option may be chosen: pass them as a list"),
  input: z.literal("text").optional().describe("a free answer, no options"),
  hint: z.string().optional(),
  resume: z.object({ tool: z.string(), arg: z.string() }).describe("call tool with arg set to the answer"),
});

const inviteStates = ["pending", "accepted", "revoked", "expired"] as const;

export const teamTools = [
  defineTool({
    name: "setup_status",
    title: "Setup status",
    group: "team",
    description:
      "Call when unsure what to do next: where setup stands (state), what to do next, and any askHuman for " +
      "your human.",
    input: z.object({}),
    output: z.object({
      state: z.enum(setupStates),
      next: z.string(),
      org: z.string().describe("the org your key lands in"),
      project: z.string().nullable().describe("your key's project prefix; null: org-wide"),
      askHuman: z.array(askHumanOutput).optional(),
    }),
    annotations: readOnly,
    handler: (ctx) => setupStatus(ctx),
  }),
  defineTool({
    name: "invite_member",
    title: "Invite a person",
    group: "team",
    description:
      "Call (owner or admin) when your human wants someone in the org. Without decided it returns askHuman: " +
      "ask your human those questions as they stand, then call again with the answers and decided:true.",
    input: createInviteInput.pick({ email: true, role: true, projectIds: true }).extend({
      decided: z.boolean().optional().describe("true: your human gave these answers"),
    }),
    output: z.object({
      invited: z.boolean(),
      askHuman: z.array(askHumanOutput).optional(),
      inviteId: z.string().optional(),
      link: z.string().optional().describe("the join link; it works once"),
      role: z.enum(memberRoles).optional(),
      email: z.string().nullable().optional(),
      projectIds: z.array(z.string()).nullable().optional(),
      expiresAt: z.string().optional(),
      emailed: z.boolean().optional(),
      tellHuman: z.string().optional(),
    }),
    annotations: additiveWrite,
    handler: async (ctx, { decided, ...answers }) => {
      if (decided !== true) return { invited: false, askHuman: await inviteQuestions(ctx) };
      const baseUrl = publicBaseUrl(`http://localhost:${ctx.config.PORT}`, ctx.config);
      const { mail, code: _inLink, ...invite } = await inviteAndMail(ctx, answers, { baseUrl, clientAddress: requestScope()?.address ?? null });
      const until = invite.expiresAt.slice(0, 10);
      const tellHuman = mail?.emailed
        ? `Invited ${invite.email} as ${invite.role}; the link was mailed to them (it works once, until ${until}).`
        : `Invite made (${invite.role}${invite.email ? `, for ${invite.email} only` : ""}). Send them this link; it works once, until ${until}: ${invite.link}` +
          (mail?.reason ? ` (not mailed: ${mail.reason})` : "");
      return { invited: true, ...invite, emailed: mail?.emailed ?? false, tellHuman };
    },
  }),
  defineTool({
    name: "list_invites",
    title: "List invites",
    group: "team",
    description:
      "Call (owner or admin) to see the org's invites, pending or spent, and the inviteId revoke_invite takes; " +
      "paged.",
    input: listInvitesInput,
    output: z.object({
      invites: z.array(
        z.object({
          inviteId: z.string(),
          role: z.enum(memberRoles),
          email: z.string().nullable(),
          projectIds: z.array(z.string()).nullable(),
          state: z.enum(inviteStates),
          emailedAt: z.string().nullable(),
          createdAt: z.string(),
          expiresAt: z.string().nullable(),
          acceptedAt: z.string().nullable(),
          acceptedBy: z.string().nullable(),
          revokedAt: z.string().nullable(),
        }),
      ),
      nextCursor: z.string().optional(),
    }),
    annotations: readOnly,
    handler: (ctx, input) => listInvites(ctx, input),
  }),
  defineTool({
    name: "revoke_invite",
    title: "Revoke an invite",
    group: "team",
    description: "Call (owner or admin) to void a pending invite before anyone uses it.",
    input: inviteIdInput,
    output: z.object({ inviteId: z.string(), state: z.enum(inviteStates), changed: z.boolean() }),
    annotations: idempotentDestructiveWrite,
    handler: (ctx, input) => revokeInvite(ctx, input),
  }),
  defineTool({
    name: "accept_invite",
    title: "Accept your human's invite",
    group: "team",
    description:
      "Call only once your human says yes: joins them to the org of a pending invite (whoami lists them). Your " +
      "key stays in this org.",
    input: inviteIdInput,
    output: z.object({
      orgId: z.string(),
      orgName: z.string(),
      memberId: z.string(),
      role: z.enum(memberRoles),
      projectIds: z.array(z.string()).nullable(),
    }),
    annotations: additiveWrite,
    handler: (ctx, input) => acceptInvite(ctx, input),
  }),
];
