import path from "node:path";
import fc from "fast-check";
import type { World } from "../server/testing/world.ts";

/**
 * Hostile values and the checks every reply to them must pass: never a 5xx, never a stack
 * trace or a source path, never the other tenant's data.
 */

/** Strings an attacker or a confused client sends. */
export function hostileString(world: World): fc.Arbitrary<string> {
  const b = world.bIds;
  // B's user and key ids are never sent, so their appearance anywhere is a leak (see problemsWith).
  const foreign = [...b.issues, b.commentId, b.attachmentId, ...b.memberIds.filter((id) => id !== b.agentMemberId), b.inviteId, world.b.orgId, world.b.projectId, world.b.prefix, b.claimToken];
  const own = [`${world.a.prefix}-1`, `${world.a.prefix}-2`, world.a.orgId, world.a.projectId, world.a.userId, world.a.email];
  return fc.oneof(
    { weight: 3, arbitrary: fc.string() },
    { weight: 2, arbitrary: fc.string({ unit: "grapheme" }) },
    // Any code point, lone surrogates included.
    { weight: 2, arbitrary: fc.string({ unit: "binary" }) },
    { weight: 3, arbitrary: fc.constantFrom(...foreign) },
    { weight: 2, arbitrary: fc.constantFrom(...own) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        "",
        " ",
        "\u0000",
        "\u202e\u0000\uffff",
        "../../../../etc/passwd",
        "'; drop table issues; --",
        "<script>alert(1)</script>",
        "%s%n%x",
        "${7*7}",
        "me",
        "null",
        "NaN",
        "-1",
        "1e309",
        "9".repeat(400),
        "AAA-0",
        "AAA-999999999999",
        "aaa-1",
        "BBB-1 ",
        "__proto__",
        "constructor",
        "rtsc_" + "A".repeat(43),
        "rtclm_" + "A".repeat(32),
        "2026-02-30",
        "2026-13-01T00:00:00Z",
        "🧨".repeat(300),
      ),
    },
    // Huge: up to 200 kB, still under the body limit.
    { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 200_000 }).map((n) => "x".repeat(n)) },
  );
}

/** Any JSON-ish value, with the hostile strings at its leaves. */
export function hostileValue(world: World): fc.Arbitrary<unknown> {
  const leaf = fc.oneof(
    { weight: 4, arbitrary: hostileString(world) },
    { weight: 2, arbitrary: fc.integer({ min: -(2 ** 53), max: 2 ** 53 }) },
    { weight: 1, arbitrary: fc.double() },
    { weight: 1, arbitrary: fc.boolean() },
    { weight: 1, arbitrary: fc.constant(null) },
  );
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      leaf,
      fc.array(tie("value"), { maxLength: 4 }),
      fc.dictionary(fc.oneof(fc.string(), fc.constantFrom("__proto__", "constructor", "identifier", "title")), tie("value"), { maxKeys: 4 }),
    ),
  }));
  return value;
}

/** JSON nested deeper than any schema: `[[[...]]]` or `{"a":{"a":...}}` as raw text. */
export const deepNesting = fc
  .tuple(fc.integer({ min: 100, max: 100_000 }), fc.boolean())
  .map(([depth, arrays]) => (arrays ? "[".repeat(depth) + "]".repeat(depth) : '{"a":'.repeat(depth) + "1" + "}".repeat(depth)));

const STACK = /\n\s+at .+:\d+:\d+|\bat (?:async )?[\w.<>]+ \((?:file:\/\/|\/)|node_modules\/|\.tsx?:\d+/;
const repoRoot = path.resolve(import.meta.dirname, "..");

export interface Verdict {
  status: number;
  body: string;
}

/** B's ids some request has carried: the app may store and show them back to A (a runtime label, a title). */
const carried = new WeakMap<World, Set<string>>();

/** Call before sending: notes which of B's ids the request carries. */
export function noteSent(world: World, request: string): void {
  const set = carried.get(world) ?? carried.set(world, new Set()).get(world)!;
  for (const id of foreignIdsOf(world)) if (request.includes(id)) set.add(id);
}

function foreignIdsOf(world: World): string[] {
  return [world.b.orgId, world.b.projectId, world.b.userId, world.b.keyId, world.bIds.commentId, world.bIds.attachmentId, ...world.bIds.memberIds];
}

/**
 * The rules for one reply. Another tenant's identifier that A sent (now or in an earlier
 * request) may come back ("BBB-1 not found", or stored as a label A chose); B's content (the
 * marker) and B's ids A never sent never may.
 */
export function problemsWith(world: World, reply: Verdict, sent: string): string[] {
  const problems: string[] = [];
  if (reply.status >= 500) problems.push(`status ${reply.status}`);
  if (STACK.test(reply.body)) problems.push(`stack trace or source path in the body: ${reply.body.match(STACK)![0]}`);
  if (reply.body.includes(repoRoot)) problems.push("a server file path in the body");
  const marker = world.marker.toLowerCase();
  if (reply.body.toLowerCase().includes(marker) && !sent.toLowerCase().includes(marker)) {
    problems.push("the other tenant's marker in the body");
  }
  noteSent(world, sent);
  const echoable = carried.get(world)!;
  for (const id of foreignIdsOf(world)) {
    if (reply.body.includes(id) && !echoable.has(id)) problems.push(`the other tenant's id ${id}, never sent by this tenant, in the body`);
  }
  return problems;
}

/** Runs `tasks` with at most `width` in flight. */
export async function inPool<T>(items: T[], width: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await run(items[next++]!);
    }),
  );
}

/** A hostile value as a JSON body: what a webhook sender could post. */
export function hostileJson(world: World): fc.Arbitrary<string> {
  return hostileValue(world).map((v) => {
    try {
      return JSON.stringify(v) ?? "null";
    } catch {
      return "null";
    }
  });
}
