import { ConfigError } from "./config/index.ts";
import { DataDirHeldError } from "../db/data-dir.ts";
import { DomainError } from "./errors.ts";

/** One clear line for an error that stops a process at boot, never a stack trace. */
export function describeFatal(error: unknown): string {
  if (error instanceof ConfigError) return error.message;
  if (error instanceof DataDirHeldError) return error.message;
  if (error instanceof DomainError) return `${error.code}: ${error.message} (${error.hint})`;
  const e = error as NodeJS.ErrnoException & { errors?: unknown[] };
  if (e?.code === "ECONNREFUSED" || e?.code === "ENOTFOUND" || e?.code === "EAI_AGAIN" || e?.code === "ETIMEDOUT") {
    return `cannot reach the database (${e.code}): check DATABASE_URL`;
  }
  if (typeof e?.code === "string" && /^(28|3D)/.test(e.code)) {
    return `the database refused the connection: ${e.message} (check DATABASE_URL)`;
  }
  return e instanceof Error ? e.message : String(error);
}
