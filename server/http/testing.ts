import net from "node:net";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One request written byte for byte on a socket: HTTP clients clean the path (`/./`, `..`,
 * `%zz`) and fix the Host header, and these tests are about what the server does when nobody has.
 */
export function rawRequest(
  port: number,
  method: string,
  target: string,
  headers: Record<string, string> = {},
  body = "",
): Promise<RawResponse> {
  const lines = [`${method} ${target} HTTP/1.1`];
  const all: Record<string, string> = { host: `127.0.0.1:${port}`, connection: "close", ...headers };
  if (body || method === "POST") all["content-length"] = String(Buffer.byteLength(body));
  for (const [name, value] of Object.entries(all)) lines.push(`${name}: ${value}`);
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const bytes = Buffer.concat(chunks);
      const split = bytes.indexOf("\r\n\r\n");
      const [statusLine = "", ...headerLines] = bytes.subarray(0, split === -1 ? bytes.length : split).toString("latin1").split("\r\n");
      const parsed: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(":");
        parsed[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      const raw = split === -1 ? Buffer.alloc(0) : bytes.subarray(split + 4);
      const body = parsed["transfer-encoding"] === "chunked" ? unchunk(raw) : raw;
      resolve({ status: Number(statusLine.split(" ")[1] ?? 0), headers: parsed, body: body.toString("utf8") });
    });
    socket.setTimeout(20_000, () => socket.destroy(new Error(`no answer to ${method} ${target}`)));
    socket.write(`${lines.join("\r\n")}\r\n\r\n${body}`);
  });
}

function unchunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; ; ) {
    const lineEnd = raw.indexOf("\r\n", at);
    const size = parseInt(raw.subarray(at, lineEnd).toString("latin1"), 16);
    if (!(size > 0)) return Buffer.concat(parts);
    parts.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
