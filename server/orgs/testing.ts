import { expect } from "vitest";
import type { Db } from "../../db/client.ts";
import { members, user } from "../../db/schema/index.ts";
import type { Ctx, Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import type { SeededOrg } from "../testing/fixtures.ts";
import { humanCtx, membershipOf } from "./access.ts";
import { newId } from "./fields.ts";

/** Awaits a promise that must fail with a DomainError, and returns the error. */
export async function refusal(promise: Promise<unknown>): Promise<DomainError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}

export type Person = "alice" | "bob" | "carol";

/** The seeded people acting as themselves through the Dash, with their member ids. */
export async function peopleOf(services: Services, org: SeededOrg) {
  const as = {} as Record<Person, Ctx>;
  const memberIds = {} as Record<Person, string>;
  for (const who of ["alice", "bob", "carol"] as const) {
    const userId = org.agents[who].userId;
    as[who] = (await humanCtx(services, { orgId: org.orgId, userId, runtime: "dash" })).ctx;
    memberIds[who] = (await membershipOf(services.db, org.orgId, userId))!.memberId;
  }
  return { as, memberIds };
}

/**
 * `count` people joined to an org as members in two statements, for lists past a page: their
 * emails are `${tag}-000@example.com` on, so they sort by number. Returns them in that order.
 */
export async function addPeople(db: Db, orgId: string, count: number, tag: string) {
  const people = Array.from({ length: count }, (_, i) => ({ id: newId(), email: `${tag}-${String(i).padStart(3, "0")}@example.com`, name: `${tag} ${i}` }));
  await db.insert(user).values(people.map((p) => ({ ...p, emailVerified: true })));
  await db.insert(members).values(people.map((p) => ({ id: newId(), orgId, userId: p.id, role: "member" as const })));
  return people.map((p) => ({ userId: p.id, email: p.email, name: p.name }));
}
