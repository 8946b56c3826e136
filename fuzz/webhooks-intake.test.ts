import { createHmac } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { hostileString, problemsWith, hostileJson } from "./hostile.ts";
import { fuzzSeeds } from "./seeds.ts";
import { cliPost, startWorld, type World } from "../server/testing/world.ts";
import { unstorableTextIn } from "../server/errors.ts";

/**
 * The intake webhooks over real HTTP against the built app: random bodies, headers and
 * signatures (none, wrong, valid) to a GitHub and a GitLab connector, and to ids that are no
 * connector. Never a 5xx or a stack trace; nothing unsigned is accepted. FUZZ_INTAKE_REQUESTS
 * sets the volume.
 */
const REQUESTS = Number(process.env.FUZZ_INTAKE_REQUESTS ?? 400);
const BATCH = 20;

let world: World;
const connectors: Record<"github" | "gitlab", { id: string; secret: string }> = {} as never;
beforeAll(async () => {
  world = await startWorld();
  for (const provider of ["github", "gitlab"] as const) {
    const added = await cliPost(world.url, world.a.token, "connectors", { orgId: world.a.orgId, action: "add", provider, repo: "acme/web", project: world.a.prefix });
    connectors[provider] = { id: added.connectorId, secret: added.secret };
  }
});
afterAll(() => world?.close());

type Auth = "none" | "wrong" | "valid";
interface Shot {
  provider: "github" | "gitlab";
  target: "connector" | "unknown" | "garbage";
  auth: Auth;
  event: string;
  body: string;
}

function shots(w: World): fc.Arbitrary<Shot> {
  const text = hostileString(w);
  const json = hostileJson(w);
  const issueLike = fc
    .record({ action: fc.constantFrom("opened", "edited", "closed", "deleted", "created"), issue: fc.record({ id: fc.integer(), number: fc.integer(), title: text, body: text, html_url: text, state: fc.constantFrom("open", "closed"), user: fc.record({ login: text }), labels: fc.array(fc.record({ name: text }), { maxLength: 3 }) }) })
    .map((p) => JSON.stringify(p));
  const gitlabLike = fc
    .record({ object_kind: fc.constantFrom("issue", "note"), user: fc.record({ username: text }), object_attributes: fc.record({ id: fc.integer(), iid: fc.integer(), title: text, description: text, url: text, state: fc.constantFrom("opened", "closed"), action: fc.constantFrom("open", "update", "close", "create"), due_date: text }) })
    .map((p) => JSON.stringify(p));
  return fc.record({
    provider: fc.constantFrom("github" as const, "gitlab" as const),
    target: fc.constantFrom<Shot["target"]>("connector", "connector", "connector", "unknown", "garbage"),
    auth: fc.constantFrom<Auth>("none", "wrong", "valid", "valid"),
    event: fc.oneof(fc.constantFrom("issues", "issue_comment", "ping", "Issue Hook", "Note Hook", "push"), text),
    body: fc.oneof(json, text, issueLike, gitlabLike),
  });
}

const decodes = (segment: string) => {
  try {
    decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
};

/** Where a shot goes, as fetch sends it (a "#" or "?" in a garbage id ends the path there). */
function urlOf(shot: Shot): URL {
  const id = shot.target === "connector" ? connectors[shot.provider].id : shot.target === "unknown" ? crypto.randomUUID() : "..%2f..%2f" + shot.event.slice(0, 20);
  return new URL(`${world.url}/webhooks/${shot.provider}/${id}`);
}

async function send(shot: Shot, url: URL): Promise<Response> {
  const own = connectors[shot.provider];
  const headers: Record<string, string> = { "content-type": "application/json" };
  const event = shot.event.replace(/[^\x20-\x7e]/g, "").slice(0, 100);
  if (shot.provider === "github") {
    Object.assign(headers, { "x-github-event": event, "x-github-delivery": crypto.randomUUID() });
    if (shot.auth !== "none") headers["x-hub-signature-256"] = shot.auth === "valid" ? `sha256=${createHmac("sha256", own.secret).update(shot.body).digest("hex")}` : `sha256=${"0".repeat(64)}`;
  } else {
    Object.assign(headers, { "x-gitlab-event": event, "x-gitlab-event-uuid": crypto.randomUUID() });
    if (shot.auth !== "none") headers["x-gitlab-token"] = shot.auth === "valid" ? own.secret : "wrong-token";
  }
  return fetch(url, { method: "POST", headers, body: shot.body });
}

test(`the intake webhooks survive ${REQUESTS} hostile requests: no 5xx, no stack trace; unsigned ones are refused`, async () => {
  const problems: string[] = [];
  for (const seed of fuzzSeeds("webhooks-intake")) {
    const samples = fc.sample(shots(world), { numRuns: REQUESTS, seed });
    for (let i = 0; i < samples.length; i += BATCH) {
      await Promise.all(
        samples.slice(i, i + BATCH).map(async (shot) => {
          const url = urlOf(shot);
          const response = await send(shot, url);
          const body = await response.text();
          const sent = `${shot.provider} ${shot.target} ${shot.auth} ${shot.event.slice(0, 40)} ${shot.body.slice(0, 200)}`;
          problems.push(...problemsWith(world, { status: response.status, body }, sent).map((p) => `${p} for ${sent}: ${body.slice(0, 200)}`));
          if (shot.target === "connector" && shot.auth !== "valid" && response.status !== 401 && response.status !== 413) problems.push(`${shot.auth} signature answered ${response.status} for ${sent}`);
          // A path that is not even valid percent-encoding, or that decodes to text no column can store
          // (a NUL, a lone surrogate: refused at the edge), is a malformed request (400), not an unknown connector.
          const malformed = !decodes(url.pathname) || unstorableTextIn(decodeURIComponent(url.pathname)) !== null;
          if (shot.target !== "connector" && response.status !== (malformed ? 400 : 404)) problems.push(`no connector answered ${response.status} for ${sent}`);
        }),
      );
    }
    // Each problem names its single request; the seed names the run that found it.
    expect(problems.slice(0, 20), `seed ${seed}`).toEqual([]);
  }
}, 480_000);
