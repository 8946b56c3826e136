import { asc, eq } from "drizzle-orm";
import { orgs, projects } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { actorOf, requireRole } from "./access.ts";

/**
 * What invite_member asks before it invites (owner or admin): whose address, as what role (admin
 * only when the caller is an owner, who alone invites one), and for a member which projects. The
 * agent puts these to its human and calls again with the answers and decided:true.
 */
export async function inviteQuestions(ctx: Ctx) {
  const actor = await actorOf(ctx);
  requireRole(actor, ["owner", "admin"], "inviting people");
  const [org] = await ctx.db.select({ name: orgs.name }).from(orgs).where(eq(orgs.id, ctx.principal.orgId));
  const orgProjects = await ctx.db
    .select({ id: projects.id, prefix: projects.prefix, name: projects.name })
    .from(projects)
    .where(eq(projects.orgId, ctx.principal.orgId))
    .orderBy(asc(projects.prefix))
    .limit(maxProjectOptions + 1);
  const resume = (arg: string) => ({ tool: "invite_member", arg });
  const context = `Inviting a person to ${org!.name}. Ask your human; call invite_member again with their answers and decided:true.`;
  const questions: AskHuman[] = [
    {
      question: "Who is the invite for? Their email address; only the person signed in with it can join.",
      context,
      input: "text",
      hint: "Leave it empty for an open invite: a link anyone holding it can use once.",
      resume: resume("email"),
    },
  ];
  if (actor.role === "owner") {
    questions.push({
      question: "Join as?",
      options: [
        { value: "member", label: "Member", detail: "works on issues; manages their own keys" },
        { value: "admin", label: "Admin", detail: "also invites, suspends members, manages keys, connectors and projects" },
      ],
      resume: resume("role"),
    });
  }
  if (orgProjects.length > 1) {
    questions.push({
      question: "Which projects may a member see? (Admins see every project.)",
      options: [
        { value: allProjects, label: "Every project", detail: "now and later" },
        ...orgProjects.slice(0, maxProjectOptions).map((p) => ({ value: p.id, label: `${p.prefix}: ${p.name}` })),
      ],
      multiple: true,
      hint: `${allProjects}: leave projectIds out.${orgProjects.length > maxProjectOptions ? " More projects: their ids are in list_projects." : ""}`,
      resume: resume("projectIds"),
    });
  }
  return questions;
}
const allProjects = "__all__";
const maxProjectOptions = 20;

/** A question an agent puts to its human as it stands, then answers by calling `resume.tool` with `resume.arg` set. */
export interface AskHuman {
  question: string;
  context?: string;
  options?: { value: string; label: string; detail?: string }[];
  multiple?: boolean;
  input?: "text";
  hint?: string;
  resume: { tool: string; arg: string };
}
