import type { Ctx, Principal, Services } from "./context.ts";
import { notePrincipal } from "./metrics/requests.ts";

/**
 * The context a door acts in; the request's log line names the principal (server/metrics/requests.ts).
 * Apart from server/context.ts, which holds only the shapes (and imports nothing), so the context
 * stays at the bottom of server/ and the metrics below every domain (decision 068).
 */
export const withPrincipal = (services: Services, principal: Principal): Ctx => {
  notePrincipal(principal);
  return { ...services, principal };
};
