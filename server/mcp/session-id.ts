import crypto from "node:crypto";
import { constantTimeEqual } from "../crypto/index.ts";
import type { Keyring } from "../crypto/index.ts";

/**
 * MCP session ids (decision 036). `initialize` hands each client `Mcp-Session-Id:
 * rtses_<id>.<signature>`, the signature an HMAC of the id and the key it was issued to, so any
 * instance checks it and nothing is kept in memory. The id alone is what a lease records; it is
 * worth nothing without the key and this server's secret.
 */
const PREFIX = "rtses_";
const SHAPE = /^rtses_([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

function signature(secret: string, keyId: string, id: string): string {
  return crypto.createHmac("sha256", secret).update(`${keyId}\n${id}`).digest("base64url");
}

/** What signs session ids, derived once per process from the master key. */
export function sessionSecret(keyring: Keyring): string {
  return keyring.deriveSecret("mcp-session");
}

/** A new session for this key: the header value to send, and the id leases record. */
export function issueSessionId(secret: string, keyId: string): { header: string; id: string } {
  const id = crypto.randomBytes(16).toString("base64url");
  return { header: `${PREFIX}${id}.${signature(secret, keyId, id)}`, id };
}

/**
 * The session id a header names, if this server issued it to this key; null for anything else
 * (forged, another key's, malformed).
 */
export function verifySessionId(secret: string, keyId: string, header: string): string | null {
  const match = SHAPE.exec(header);
  if (!match) return null;
  const [, id, sent] = match;
  return constantTimeEqual(sent!, signature(secret, keyId, id!)) ? id! : null;
}
