import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemPrincipal, withPrincipal } from "../context.ts";
import { startApp, type AppProcess } from "../testing/app-process.ts";
import { signUpOverHttp } from "../testing/dash.ts";
import { useTestServices } from "../testing/database.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../testing/db.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { UPLOAD_MAX_BYTES } from "./import.ts";
import { comparable, exportText, furnishOrg } from "./testing.ts";

/**
 * The Dash's import of a JSON export into a new org, over real HTTP against the built app (on
 * PostgreSQL, or embedded PGlite): a multipart form post as a browser sends it, by a person
 * signed up over HTTP. The export comes from an org furnished here, a file like any download.
 */
describe("the Dash's import of an export into a new org", () => {
  const env = useTestServices();
  let database: TestDatabase | null = null;
  let app: AppProcess;
  let person: { cookie: string; email: string };
  let exported: string;

  beforeAll(async () => {
    database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
    app = await startApp({
      ...(database ? { DATABASE_URL: database.url!, RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64") } : {}),
      RETASC_EMAIL_PASSWORD: "on",
    });
    const email = `restorer-${crypto.randomBytes(3).toString("hex")}@example.com`;
    person = { ...(await signUpOverHttp(app.url, email, "Restorer")), email };
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
  const alertOf = (html: string) => /role="alert"[^>]*><p class="font-medium">([^<]*)<\/p>/.exec(html.replaceAll("<!-- -->", ""))?.[1];

  it("makes a new org the uploader owns from the export, lands them in it, and exports it back the same", async () => {
    const done = await upload("Restored", exported);
    expect(done.status, done.body).toBe(302);
    expect(done.location).toBe("/dash");
    const orgCookie = done.setCookie.map((c) => c.split(";")[0]!).find((c) => c.startsWith("retasc_org="));
    expect(orgCookie).toBeDefined();
    const cookie = `${person.cookie}; ${orgCookie}`;
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
    expect(alertOf(big.body)).toBe(`the file is ${UPLOAD_MAX_BYTES + 1} bytes; an upload is at most ${UPLOAD_MAX_BYTES} bytes (32 MiB)`);

    const unnamed = await upload("  ", exported);
    expect(unnamed.status).toBe(200);
    expect(alertOf(unnamed.body)).toBe("the new org needs a name of 1 to 100 characters");

    for (const refused of [notJson, future, big, unnamed]) expect(refused.setCookie.join()).not.toContain("retasc_org=");
    const switcher = await (await fetch(`${app.url}/dash/queue`, { headers: { cookie: person.cookie } })).text();
    expect(switcher).not.toContain("Nope");
  });
});
