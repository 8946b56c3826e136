import { cliPost } from "../../testing/world.ts";
import { agentDoors, doorsOf, everyone, managers, mcp, OK, owners, type Actor, type Person, type Role, type RolesWorld, type Row } from "./roles-doors.ts";

/**
 * The rows of people and keys (issue 37, decision 043): invites, scopes, each key and member
 * action tried on another owner, a peer admin, a member and the actor themself, and the roles.
 */

type Target = "another owner" | "a peer admin" | "a member" | "themself";
const targets: Target[] = ["another owner", "a peer admin", "a member", "themself"];

/** Whom an actor may act on by rank: anyone themself; owners anyone; admins only members. */
const outranks = (target: Target): Role[] => (target === "themself" ? everyone : target === "a member" ? managers : owners);

export function peopleRows(w: RolesWorld): Row[] {
  const { dash, cli, asOwner } = doorsOf(w);
  const { orgId, people } = w;
  // What the rows act on, made fresh for each try so one role's success leaves the next a target.
  /** The person a row acts on: never one of the acting three, so no row takes an actor's keys away. */
  const personFor = (target: Target, actor: Actor): Person =>
    target === "themself" ? actor : target === "another owner" ? people.owner2 : target === "a peer admin" ? people.admin2 : people.member2;
  const freshKeyOf = async (person: Person): Promise<string> => (await cliPost(w.url, person.token, "keys", { orgId, action: "mint", runtime: "codex" })).keyId;
  const restoreMember = (person: Person) => asOwner("members", { action: "reactivate", memberId: person.memberId });
  const setRole = (person: Person, role: Role) => dash(people.owner, "/dash/settings/members", { intent: `make-${role}`, memberId: person.memberId });
  const roleOf = (person: Person): Role => (person === people.owner2 ? "owner" : person === people.admin2 ? "admin" : "member");
  const freshInvite = async () => (await asOwner("members", { action: "invite" })).inviteId as string;
  return [
    {
      action: "invite a member",
      allowed: managers,
      doors: {
        Dash: (a) => dash(a, "/dash/settings/members", { intent: "invite", role: "member" }),
        CLI: (a) => cli(a, "members", { action: "invite", role: "member" }),
        ...agentDoors((client) => mcp(client, "invite_member", { role: "member", decided: true })),
      },
    },
    {
      action: "invite an admin",
      allowed: owners,
      doors: {
        Dash: (a) => dash(a, "/dash/settings/members", { intent: "invite", role: "admin" }),
        CLI: (a) => cli(a, "members", { action: "invite", role: "admin" }),
        ...agentDoors((client) => mcp(client, "invite_member", { role: "admin", decided: true })),
      },
    },
    {
      action: "invite an owner ²",
      allowed: [],
      refusal: "INVALID_INPUT",
      doors: {
        Dash: (a) => dash(a, "/dash/settings/members", { intent: "invite", role: "owner" }),
        CLI: (a) => cli(a, "members", { action: "invite", role: "owner" }),
        ...agentDoors((client) => mcp(client, "invite_member", { role: "owner", decided: true })),
      },
    },
    {
      // Asking is the first half of inviting: a member is refused before any question.
      action: "ask whom to invite",
      allowed: managers,
      doors: agentDoors((client) => mcp(client, "invite_member", {})),
    },
    {
      action: "list the org's invites",
      allowed: managers,
      doors: agentDoors((client) => mcp(client, "list_invites", {})),
    },
    {
      // Only members are scoped; all projects (null) leaves the rows below as they were.
      action: "scope a member to projects",
      allowed: managers,
      doors: {
        Dash: (a) => dash(a, "/dash/settings/members", { intent: "scope", memberId: people.member2.memberId }),
        CLI: (a) => cli(a, "members", { action: "scope", memberId: people.member2.memberId, projectIds: null }),
      },
    },
    {
      action: "revoke an invite",
      allowed: managers,
      doors: {
        Dash: async (a) => dash(a, "/dash/settings/members", { intent: "revoke-invite", inviteId: await freshInvite() }),
        CLI: async (a) => cli(a, "members", { action: "revoke-invite", inviteId: await freshInvite() }),
        ...agentDoors(async (client) => mcp(client, "revoke_invite", { inviteId: await freshInvite() })),
      },
    },
    ...targets.flatMap((target): Row[] => [
      {
        action: `mint a key for ${target}`,
        allowed: outranks(target),
        doors: { CLI: (a) => cli(a, "keys", { action: "mint", runtime: "codex", userId: personFor(target, a).userId }) },
      },
      {
        action: `revoke a key of ${target}`,
        allowed: outranks(target),
        doors: {
          Dash: async (a) => dash(a, "/dash/settings/keys", { intent: "revoke", keyId: await freshKeyOf(personFor(target, a)) }),
          CLI: async (a) => cli(a, "keys", { action: "revoke", keyId: await freshKeyOf(personFor(target, a)) }),
        },
      },
      {
        action: `rotate a key of ${target}`,
        allowed: outranks(target),
        doors: {
          Dash: async (a) => dash(a, "/dash/settings/keys", { intent: "rotate", keyId: await freshKeyOf(personFor(target, a)) }),
          CLI: async (a) => cli(a, "keys", { action: "rotate", keyId: await freshKeyOf(personFor(target, a)) }),
        },
      },
      {
        action: `retire an agent of ${target}`,
        allowed: outranks(target),
        doors: {
          Dash: async (a) => dash(a, "/dash/settings/members", { intent: "retire", memberId: await freshKeyOf(personFor(target, a)) }),
          ...agentDoors(async (client, a) => mcp(client, "retire_member", { memberId: await freshKeyOf(personFor(target, a)) })),
        },
      },
    ]),
    {
      action: "raise a key's claim cap above the default",
      allowed: managers,
      doors: { CLI: (a) => cli(a, "keys", { action: "mint", runtime: "codex", claimCap: 50 }) },
    },
    ...targets.map(
      (target): Row => ({
        action: `suspend ${target}`,
        // Nobody suspends themself (someone else must, so an org never locks itself out).
        allowed: target === "themself" ? [] : outranks(target),
        doors: {
          Dash: (a) => dash(a, "/dash/settings/members", { intent: "suspend", memberId: personFor(target, a).memberId }),
          CLI: (a) => cli(a, "members", { action: "suspend", memberId: personFor(target, a).memberId }),
          ...agentDoors((client, a) => mcp(client, "suspend_member", { memberId: personFor(target, a).memberId })),
        },
        after: async (a, outcome) => (outcome === OK ? restoreMember(personFor(target, a)) : null),
      }),
    ),
    ...targets
      .filter((t) => t !== "themself")
      .map(
        (target): Row => ({
          action: `reactivate ${target}`,
          allowed: outranks(target),
          before: (a) => asOwner("members", { action: "suspend", memberId: personFor(target, a).memberId }),
          doors: {
            Dash: (a) => dash(a, "/dash/settings/members", { intent: "reactivate", memberId: personFor(target, a).memberId }),
            CLI: (a) => cli(a, "members", { action: "reactivate", memberId: personFor(target, a).memberId }),
            ...agentDoors((client, a) => mcp(client, "reactivate_member", { memberId: personFor(target, a).memberId })),
          },
          after: (a) => restoreMember(personFor(target, a)),
        }),
      ),
    ...(
      [
        ["another owner", "admin"],
        ["a peer admin", "member"],
        ["a member", "admin"],
        ["a member", "owner"],
        ["themself", "owner"],
      ] as const
    ).map(
      ([target, role]): Row => ({
        action: `make ${target} ${role === "admin" ? "an admin" : `a${role === "owner" ? "n" : ""} ${role}`}`,
        allowed: owners,
        doors: { Dash: (a) => dash(a, "/dash/settings/members", { intent: `make-${role}`, memberId: personFor(target, a).memberId }) },
        after: async (a) => {
          const person = personFor(target, a);
          if (person !== a) await setRole(person, roleOf(person));
        },
      }),
    ),
  ];
}
