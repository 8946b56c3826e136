import fs from "node:fs";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { refusal } from "../api.ts";
import { CliError } from "../errors.ts";
import { note, ok, printJson } from "../output.ts";
import { requireSession } from "../session.ts";
import { orgIdOf, type OrgFlags } from "./manage.ts";

/**
 * `retasc export`: the org's export streamed from /api/cli/export (app/routes/api.cli.export.ts)
 * to a file or standard output as it arrives, so an export of any size passes in flat memory.
 */
export async function exportOrg(flags: OrgFlags & { format?: string; table?: string; out?: string }) {
  const format = flags.format ?? "json";
  if (format !== "json" && format !== "csv") throw new CliError("INVALID_INPUT", `--format is json or csv, not ${format}`, "retasc export --format json --out backup.json");
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const url = new URL(`${session.url}/api/cli/export`);
  url.searchParams.set("orgId", orgId);
  url.searchParams.set("format", format);
  if (flags.table) url.searchParams.set("table", flags.table);
  let response;
  try {
    response = await fetch(url, { headers: { authorization: `Bearer ${session.token}` } });
  } catch (error) {
    const e = error as Error & { cause?: { code?: string } };
    throw new CliError("UNAVAILABLE", `cannot reach ${session.url} (${e.cause?.code ?? e.message})`, "Is the server running? Pass --url or set RETASC_DEPLOYMENT_URL.");
  }
  if (!response.ok || !response.body) {
    const text = await response.text();
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
    throw refusal(url.pathname, response.status, body);
  }
  const target = flags.out ? fs.createWriteStream(flags.out, { mode: 0o600 }) : stdoutUnclosed();
  try {
    await pipeline(Readable.fromWeb(response.body as import("node:stream/web").ReadableStream), target);
  } catch (error) {
    throw new CliError("UNAVAILABLE", `the export broke off (${(error as Error).message})`, flags.out ? `${flags.out} is incomplete; run the export again.` : "Run the export again.");
  }
  if (flags.out) {
    const bytes = fs.statSync(flags.out).size;
    if (flags.json) printJson({ out: flags.out, bytes, format });
    else ok(`Exported to ${flags.out} (${bytes} bytes).`);
    if (format === "json") note("  It holds the org decrypted: keep it as safe as the server.");
  }
}

/** Standard output as a pipeline target that is not closed when the export ends. */
function stdoutUnclosed(): Writable {
  return new Writable({
    write(chunk, _encoding, done) {
      if (process.stdout.write(chunk)) done();
      else process.stdout.once("drain", () => done());
    },
  });
}
