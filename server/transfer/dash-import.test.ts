import crypto from "node:crypto";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemPrincipal } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { residentBytes, startApp, type AppProcess } from "../testing/app-process.ts";
import { signUpOverHttp } from "../testing/dash.ts";
import { useTestServices } from "../testing/database.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../testing/db.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { UPLOAD_MAX_BYTES } from "./import.ts";
import { comparable, exportText, furnishOrg } from "./testing.ts";

/**
 * The Dash's import of a JSON export into a new org, over real HTTP against the built app (on
 * PostgreSQL, or embedded PGlite): a multipart form post as a browser sends it, by people signed
 * up over HTTP who made their orgs on the Dash. The export comes from an org furnished here, a
 * file like any download. Decision 037: the role is checked and the caps taken before the body is
 * read, and no upload, however it is shaped, holds the server.
 */
describe("the Dash's import of an export into a new org", () => {
  const env = useTestServices();
  let database: TestDatabase | null = null;
  let app: AppProcess;
  let person: { cookie: string; session: string; email: string };
  let exported: string;

  /** Someone signed up over HTTP who made an org of their own on the Dash (so they are its owner). */
  const owner = async (tag: string) => {
    const email = `${tag.toLowerCase()}-${crypto.randomBytes(3).toString("hex")}@example.com`;
    const { cookie } = await signUpOverHttp(app.url, email, tag);
    const made = await fetch(`${app.url}/dash/orgs/new`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ name: `${tag}'s org` }),
    });
    expect(made.status, await made.text()).toBe(302);
    const org = made.headers.getSetCookie().map((c) => c.split(";")[0]!).find((c) => c.startsWith("retasc_org="));
    return { cookie: `${cookie}; ${org}`, session: cookie, email };
  };

  beforeAll(async () => {
    database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
    app = await startApp({
      ...(database ? { DATABASE_URL: database.url!, RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64") } : {}),
      RETASC_EMAIL_PASSWORD: "on",
      IMPORT_UPLOADS_AT_ONCE: "2",
    });
    person = await owner("Restorer");
    const org = await seedOrg(env.services, { prefix: "ENG" });
    await furnishOrg(org);
    exported = await exportText(withPrincipal(env.services, systemPrincipal(org.orgId)));
  }, 240_000);
  afterAll(async () => {
    await app?.stop();
    await database?.close();
  });

  const upload = async (orgName: string, content: string | Uint8Array<ArrayBuffer>, cookie = person.cookie) => {
    const form = new FormData();
    form.set("orgName", orgName);
    form.set("file", new Blob([content], { type: "application/json" }), "export.json");
    const response = await fetch(`${app.url}/dash/settings/transfer`, { method: "POST", redirect: "manual", headers: { cookie, origin: app.url }, body: form });
    return { status: response.status, location: response.headers.get("location"), setCookie: response.headers.getSetCookie(), body: await response.text() };
  };
  const alertOf = (html: string) => /role="alert"[^>]*><p class="font-medium">([^<]*)<\/p>/.exec(html.replaceAll("<!-- -->", "").replaceAll("&#x27;", "'"))?.[1];

  /**
   * An upload whose body is sent only in part: the form's fields and the first `sent` bytes of a
   * file of `size`, the Content-Length saying the whole. The server can answer before the rest
   * comes (a refusal), or wait for it (an upload in progress); `abort` hangs up.
   */
  const partialUpload = (cookie: string, size: number, sent = 64 * 1024) => {
    const boundary = `----retasc${crypto.randomBytes(8).toString("hex")}`;
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="orgName"\r\n\r\nPartial\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="export.json"\r\nContent-Type: application/json\r\n\r\n`,
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const request = http.request(`${app.url}/dash/settings/transfer`, {
      method: "POST",
      headers: { cookie, origin: app.url, "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": head.length + size + tail.length },
    });
    request.on("error", () => {});
    const answered = new Promise<{ status: number; body: string }>((resolve) => {
      request.on("response", (response) => {
        let body = "";
        response.on("data", (d) => (body += d));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
      });
    });
    request.write(head);
    request.write(Buffer.alloc(Math.min(sent, size), 32));
    return { answered, abort: () => request.destroy() };
  };
  const within = <T,>(promise: Promise<T>, ms: number) =>
    Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms))]);

  it("makes a new org the uploader owns from the export, lands them in it, and exports it back the same", async () => {
    const done = await upload("Restored", exported);
    expect(done.status, done.body).toBe(302);
    expect(done.location).toBe("/dash");
    const orgCookie = done.setCookie.map((c) => c.split(";")[0]!).find((c) => c.startsWith("retasc_org="));
    expect(orgCookie).toBeDefined();
    const cookie = `${person.session}; ${orgCookie}`;
    const page = await (await fetch(`${app.url}/dash/settings/transfer`, { headers: { cookie } })).text();
    expect(page.replaceAll("<!-- -->", "")).toContain("Files up to 32 MiB");
    expect(page).toMatch(/<input[^>]*type="file"[^>]*name="file"/);

    // In the new org, the person is its owner: they download it, and it is the export that went in.
    const again = await fetch(`${app.url}/dash/settings/transfer/export?format=json`, { headers: { cookie } });
    expect(again.status).toBe(200);
    const doc = (await again.json()) as { org: { name: string }; people: { email: string; member: { role: string } | null }[] };
    expect(doc.org.name).toBe("Restored");
    const me = doc.people.find((p) => p.email === person.email);
    expect(me?.member?.role).toBe("owner");
    // Nobody else the file names is matched to an account or made a member: each is a
    // placeholder, claimed by its person's verified email ("That's me").
    const original = JSON.parse(exported) as typeof doc;
    const others = doc.people.filter((p) => p !== me);
    expect(others).toHaveLength(original.people.filter((p) => p.email !== person.email).length);
    for (const other of others) {
      expect(other.email).toMatch(/@placeholder\.invalid$/);
      expect(other.member).toBeNull();
    }
    // Everything but the people list is the export that went in.
    expect(comparable(JSON.stringify({ ...doc, people: [] }))).toEqual(comparable(JSON.stringify({ ...original, people: [] })));
    const queue = await (await fetch(`${app.url}/dash/queue`, { headers: { cookie } })).text();
    expect(queue).toContain("Restored");
    // A pretty-printed export (another layout, as a JSON tool writes it) comes back too.
    expect((await upload("Pretty", JSON.stringify(JSON.parse(exported), null, 2))).status).toBe(302);
  });

  it("says what is wrong with a bad file on the page, never a 500, and makes no org", async () => {
    const notJson = await upload("Nope", "this is not json at all");
    expect(notJson.status).toBe(200);
    expect(alertOf(notJson.body)).toBe("this file is not a Retasc export (not JSON)");

    const header = JSON.parse(exported.split("\n")[0]!.slice(0, -1) + "}");
    const future = await upload("Nope", JSON.stringify({ ...header, version: 99 }));
    expect(future.status).toBe(200);
    expect(alertOf(future.body)).toBe("export version 99 is not supported");

    const big = await upload("Nope", new Uint8Array(UPLOAD_MAX_BYTES + 1).fill(32));
    expect(big.status).toBe(200);
    expect(alertOf(big.body)).toBe(`the file is larger than ${UPLOAD_MAX_BYTES} bytes, the most an upload may be (32 MiB)`);

    const unnamed = await upload("  ", exported);
    expect(unnamed.status).toBe(200);
    expect(alertOf(unnamed.body)).toBe("the new org needs a name of 1 to 100 characters");

    for (const refused of [notJson, future, big, unnamed]) expect(refused.setCookie.join()).not.toContain("retasc_org=");
    const switcher = await (await fetch(`${app.url}/dash/queue`, { headers: { cookie: person.cookie } })).text();
    expect(switcher).not.toContain("Nope");
  });

  it("refuses a link the live tools refuse: a javascript: attachment link makes no org (finding 8)", async () => {
    const scripted = exported.replace('"url":"https://example.com/spec-2"', '"url":"javascript:alert(document.cookie)"');
    expect(scripted).not.toBe(exported);
    const hostile = await upload("Scripted", scripted);
    expect(hostile.status).toBe(200);
    expect(alertOf(hostile.body)).toMatch(/^record \d+ \(issues\): issue ENG-\d+: attachments\.\d+\.url only http:\/\/ and https:\/\/ links are accepted/);
    expect(hostile.setCookie.join()).not.toContain("retasc_org=");
    const switcher = await (await fetch(`${app.url}/dash/queue`, { headers: { cookie: person.cookie } })).text();
    expect(switcher).not.toContain("Scripted");
  });

  it("refuses someone who is not an owner or admin before it reads the upload (finding 4)", async () => {
    // A member of the restorer's org, in it.
    const invited = await fetch(`${app.url}/dash/settings/members`, {
      method: "POST",
      headers: { cookie: person.cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ intent: "invite", role: "member" }),
    });
    const code = /rtscinv_[A-Za-z0-9_-]+/.exec(await invited.text())?.[0];
    expect(code).toBeTruthy();
    const email = `member-${crypto.randomBytes(3).toString("hex")}@example.com`;
    const { cookie } = await signUpOverHttp(app.url, email, "Member");
    const joined = await fetch(`${app.url}/join/${code}`, { method: "POST", redirect: "manual", headers: { cookie, origin: app.url } });
    expect(joined.status).toBe(302);
    const member = `${cookie}; ${joined.headers.getSetCookie().map((c) => c.split(";")[0]!).find((c) => c.startsWith("retasc_org="))}`;
    const page = await (await fetch(`${app.url}/dash/settings/transfer`, { headers: { cookie: member } })).text();
    expect(page).toContain("Owners and admins import exports.");
    expect(page).not.toMatch(/<input[^>]*type="file"/);

    // 64 KiB of a 30 MiB body sent: the refusal comes without the rest.
    const partial = partialUpload(member, 30 * 1024 * 1024);
    const refused = await within(partial.answered, 15_000);
    partial.abort();
    expect(refused.status).toBe(200);
    expect(alertOf(refused.body)).toBe("importing an export needs the owner or admin role; you are a member");
  });

  it("takes one import per person and IMPORT_UPLOADS_AT_ONCE per process, and says why it refuses (finding 4)", async () => {
    const other = await owner("Other");
    const third = await owner("Third");
    // The restorer's upload is on its way (its body not all sent): a second one of theirs is refused.
    const first = partialUpload(person.cookie, 20 * 1024 * 1024);
    // A moment for the server to take its place, which it does once it has read the head and
    // checked the role: nothing outside shows when (a probe upload would take a place itself).
    await new Promise((r) => setTimeout(r, 500));
    const again = partialUpload(person.cookie, 1024, 1024);
    const twice = await within(again.answered, 15_000);
    again.abort();
    expect(alertOf(twice.body)).toBe("another import of yours is still running: one at a time per person");
    // Another person's is taken (the second of two at once); a third person's is refused, saying why.
    const second = partialUpload(other.cookie, 20 * 1024 * 1024);
    await new Promise((r) => setTimeout(r, 500)); // as for the first
    const extra = partialUpload(third.cookie, 1024, 1024);
    const full = await within(extra.answered, 15_000);
    extra.abort();
    expect(alertOf(full.body)).toBe("this server is already importing 2 exports, as many as it takes at once");
    // Hanging up frees the places: the third person's upload is taken once the server has seen both go.
    first.abort();
    second.abort();
    let after = await upload("Third's restore", exported, third.cookie);
    for (const deadline = Date.now() + 10_000; alertOf(after.body) === alertOf(full.body) && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 100));
      after = await upload("Third's restore", exported, third.cookie);
    }
    expect(after.status, alertOf(after.body)).toBe(302);
  });

  it("reads a crafted 32 MiB document of tiny objects in bounded memory, and /healthz keeps answering (finding 4)", async () => {
    // The whole document on one line, its people section 32 MiB of empty objects: parsed whole,
    // as the reader did, it took about a gigabyte and stalled the event loop for seconds.
    const header = exported.split("\n")[0]!;
    const tiny = "{},".repeat(Math.floor((UPLOAD_MAX_BYTES - header.length - 64) / 3));
    const crafted = `${header}"people":[${tiny}{}]}`;
    expect(crafted.length).toBeLessThanOrEqual(UPLOAD_MAX_BYTES);
    const pid = app.child.pid!;
    const before = residentBytes(pid);
    let peak = before;
    let slowest = 0;
    let polling = true;
    const health = (async () => {
      while (polling) {
        const started = performance.now();
        await fetch(`${app.url}/healthz`);
        slowest = Math.max(slowest, performance.now() - started);
        peak = Math.max(peak, residentBytes(pid));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const refused = await upload("Crafted", crafted);
    polling = false;
    await health;
    expect(peak - before, `RSS grew from ${before} to ${peak} bytes`).toBeLessThan(150 * 1024 * 1024);
    expect(slowest, "the slowest /healthz meanwhile, ms").toBeLessThan(1000);
    // Refused at its first record, which is no person.
    expect(refused.status).toBe(200);
    expect(alertOf(refused.body)).toMatch(/^record 1 \(people\): people: id /);
  });
});
