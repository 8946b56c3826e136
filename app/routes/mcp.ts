import { handleMcpRequest } from "../../server/mcp/http.ts";
import type { Route } from "./+types/mcp";

/** `/mcp`: the agent surface (Streamable HTTP, stateless). All the work is in server/mcp. */
export function action({ request, context }: Route.ActionArgs) {
  return handleMcpRequest(request, { services: context.services, log: context.log });
}

export function loader({ request, context }: Route.LoaderArgs) {
  return handleMcpRequest(request, { services: context.services, log: context.log });
}
