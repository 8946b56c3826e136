import fs from "node:fs";
import path from "node:path";
import { pipeline } from "node:stream";
import type { IncomingMessage, ServerResponse } from "node:http";

const types: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8",
  ".woff2": "font/woff2",
};

/** Serves the built client files; fingerprinted /assets/ are cached for a year. */
export function createStaticHandler(root: string) {
  const base = path.resolve(root);
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    if (req.method !== "GET" && req.method !== "HEAD") return false;
    let pathname: string;
    try {
      pathname = decodeURIComponent((req.url ?? "/").split("?")[0]!);
    } catch {
      return false; // not a file name (`/%`): the router answers it
    }
    if (pathname === "/" || pathname.endsWith("/")) return false;
    const file = path.resolve(base, "." + pathname);
    if (!file.startsWith(base + path.sep)) return false;
    let stat: fs.Stats;
    try {
      stat = fs.statSync(file);
    } catch {
      return false;
    }
    if (!stat.isFile()) return false;
    res.writeHead(200, {
      "content-type": types[path.extname(file)] ?? "application/octet-stream",
      "content-length": stat.size,
      "cache-control": pathname.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "public, max-age=3600",
    });
    if (req.method === "HEAD") res.end();
    // pipeline, not pipe: a read error must end this response, not go unhandled and end the process.
    else pipeline(fs.createReadStream(file), res, () => {});
    return true;
  };
}
