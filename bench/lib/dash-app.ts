import crypto from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { useBenchPostgres } from "./postgres-env.ts";
import { log } from "./stats.ts";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The built app on a fresh PostgreSQL database of the benchmark's own, as a deployment runs it
 * (React's production build), a person signed up over HTTP with their session cookie, and
 * in-process services on the same database and master key for seeding what the page shows
 * (bench/dash-queue.ts, bench/fleet-render.ts); `get` times one page as that person.
 */
export async function startDashBenchApp(env: Record<string, string> = {}) {
  useBenchPostgres();
  process.env.RETASC_TEST_BUILD_DIR ??= path.join(repoRoot, "node_modules/.cache/retasc-test-build", `bench-${crypto.randomBytes(4).toString("hex")}`);
  const { createTestDatabase, servicesFor, testConfig } = await import("../../server/testing/db.ts");
  const { Keyring } = await import("../../server/crypto/index.ts");
  const { signUpOverHttp } = await import("../../server/testing/dash.ts");
  const { startApp } = await import("../../server/testing/app-process.ts");
  const database = await createTestDatabase({ max: 4 });
  const masterKey = crypto.randomBytes(32);
  log("building and starting the app");
  const app = await startApp({
    DATABASE_URL: database.url!,
    RETASC_MASTER_KEY: masterKey.toString("base64"),
    RETASC_EMAIL_PASSWORD: "on",
    LOG_LEVEL: "warn",
    // React's production build, as a deployment runs it (unset, react-dom loads its development build).
    NODE_ENV: "production",
    ...env,
  });
  const others: Awaited<ReturnType<typeof startApp>>[] = [];
  try {
    const { cookie } = await signUpOverHttp(app.url, "bench@example.com", "Bench");
    const services = servicesFor(database.database, { keyring: new Keyring(masterKey), config: testConfig() });
    /** One page as the signed-in person, timed from the request to the last byte; anything but 200 throws. */
    const get = async (pathname: string) => {
      const start = performance.now();
      const response = await fetch(`${app.url}${pathname}`, { headers: { cookie } });
      const body = await response.text();
      const ms = performance.now() - start;
      if (response.status !== 200) throw new Error(`${pathname}: ${response.status}\n${body.slice(0, 500)}`);
      return { ms, bytes: body.length, body };
    };
    return {
      app,
      cookie,
      services,
      get,
      /** Another instance of the app on the same database and master key (the same sessions and keys), with `more` in its environment. */
      async another(more: Record<string, string>) {
        const other = await startApp({ DATABASE_URL: database.url!, RETASC_MASTER_KEY: masterKey.toString("base64"), RETASC_EMAIL_PASSWORD: "on", LOG_LEVEL: "warn", NODE_ENV: "production", ...more });
        others.push(other);
        return other;
      },
      async close() {
        await Promise.all(others.map((other) => other.stop()));
        await app.stop();
        await database.close();
      },
    };
  } catch (error) {
    await app.stop();
    await database.close();
    throw error;
  }
}
