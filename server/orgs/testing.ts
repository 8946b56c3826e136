import { expect } from "vitest";
import type { Ctx, Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import type { SeededOrg } from "../testing/fixtures.ts";
import { humanCtx, membershipOf } from "./access.ts";

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
