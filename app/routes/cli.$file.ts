import fs from "node:fs";
import { Readable } from "node:stream";
import { redirect } from "react-router";
import { cliInstallCommand } from "../../constants/cli-install.ts";
import { cliPackage } from "../../server/distribution/cli-package.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import type { Route } from "./+types/cli.$file";

/**
 * The CLI from this server: `/cli/latest` redirects to the versioned tarball, which never
 * changes once served; `/cli/latest.json` says which version that is (for `retasc update` and
 * `retasc doctor`).
 */
export function loader({ request, params, context }: Route.LoaderArgs) {
  const packed = cliPackage(context.services.config.RETASC_BUILD_DIR);
  if (!packed) {
    return text(404, "This server was built without the CLI package (npm run build packs it).");
  }
  const origin = publicBaseUrl(request, context.services.config);
  if (params.file === "latest") throw redirect(`/cli/${packed.file}`, { headers: { "cache-control": "no-cache" } });
  if (params.file === "latest.json") {
    return Response.json(
      { version: packed.version, url: `${origin}/cli/${packed.file}`, install: cliInstallCommand(origin) },
      { headers: { "cache-control": "no-cache" } },
    );
  }
  if (params.file !== packed.file) return text(404, `No such CLI package here. The latest is ${origin}/cli/latest (${packed.version}).`);
  const body = Readable.toWeb(fs.createReadStream(packed.path)) as ReadableStream<Uint8Array>;
  return new Response(body, {
    headers: {
      "content-type": "application/gzip",
      "content-length": String(fs.statSync(packed.path).size),
      "cache-control": "public, max-age=31536000, immutable",
    },
  });
}

const text = (status: number, message: string) =>
  new Response(`${message}\n`, { status, headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-cache" } });
