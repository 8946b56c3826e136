import type { Principal, Services } from "../context.ts";
import { setupStatus } from "../setup/status.ts";
import { withPrincipal } from "../with-principal.ts";
import { serverInstructions } from "./registry.ts";

/**
 * The handshake's instructions for this key: the loop every agent follows (serverInstructions),
 * then where the key's work lands and setup_status's answer, so an agent knows both before its
 * first call. Read at `initialize`, once per session.
 */
export async function instructionsFor(services: Services, principal: Principal): Promise<string> {
  const status = await setupStatus(withPrincipal(services, principal));
  const where = status.project ? `${status.org} / ${status.project}` : `${status.org}, org-wide`;
  return `${serverInstructions} This key works in ${where}. setup_status now: ${status.state}. ${status.next}`;
}
