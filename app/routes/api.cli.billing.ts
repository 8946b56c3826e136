import type { Route } from "./+types/api.cli.billing";
import { cliJson, cliOrgAction, cliQueryCtx } from "../cli-api.server.ts";
import { billingSummary, listLedger, setSpendCap, setSpendCapInput } from "../../server/billing/index.ts";
import { buyCredit, buyCreditInput } from "../../server/billing/purchases.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";

/** `retasc billing`: the billing summary and the latest charges (the caller's own, for members). */
export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => {
    const { ctx } = await cliQueryCtx(request, context);
    const [summary, recent] = await Promise.all([billingSummary(ctx, {}), listLedger(ctx, { limit: 10 })]);
    return { summary, recent: recent.entries };
  });
}

/** `{ orgId, action: "buy", pack }` → the Checkout URL; `{ orgId, action: "cap", monthlyUsd }` (null lifts it). */
export function action({ request, context }: Route.ActionArgs) {
  return cliOrgAction(request, context, {
    buy: (ctx, input) => buyCredit(ctx, buyCreditInput.parse(input), { baseUrl: publicBaseUrl(request, context.services.config) }),
    cap: (ctx, input) => setSpendCap(ctx, setSpendCapInput.parse(input)),
  });
}
