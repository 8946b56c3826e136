import { CliError } from "../errors.ts";
import { note, ok, out, printJson, table } from "../output.ts";
import { asSession, requireSession } from "../session.ts";
import { orgIdOf, type OrgFlags } from "./manage.ts";

/**
 * `retasc billing`: the org's credit, cap and latest charges; buying a credit pack (prints the
 * Stripe Checkout URL) and setting the monthly cap. Everything goes through /api/cli/billing
 * (app/routes/api.cli.billing.ts) as the signed-in person.
 */

/** GET /api/cli/billing, the fields read here (server/billing/summary.ts, ledger.ts). */
interface BillingReply {
  summary: {
    enabled: boolean;
    note: string;
    yourSpendThisMonthMicroCredits: number;
    balance: { givenMicroCredits: number; boughtMicroCredits: number; totalMicroCredits: number } | null;
    spendCap: { monthlyMicroCredits: number | null; spentThisMonthMicroCredits: number; monthStartsAt: string; timeZone: string } | null;
  };
  recent: { at: string; person: { email: string | null } | null; runtime: string | null; tool: string; tier: string; microCredits: number; issue: string | null }[];
}

/** POST /api/cli/billing, action buy. */
interface CheckoutReply {
  purchaseId: string;
  pack: number;
  checkoutSessionId: string;
  url: string;
}

/** POST /api/cli/billing, action cap. */
interface CapReply {
  monthlyMicroCredits: number | null;
  monthlyUsd: number | null;
}

const CREDIT_PACKS_USD = ["10", "25", "50", "100"];

/** Micro-credits as dollars: 1,000,000 = $1; sub-cent amounts keep four digits. */
function usd(microCredits: number): string {
  const dollars = microCredits / 1_000_000;
  const digits = microCredits % 10_000 === 0 ? 2 : 4;
  return `${dollars < 0 ? "-" : ""}$${Math.abs(dollars).toFixed(digits)}`;
}

export async function billing(flags: OrgFlags) {
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const reply = await asSession<BillingReply>(session, "/billing", { query: { orgId } });
  if (flags.json) return printJson(reply);
  const { summary, recent } = reply;
  if (!summary.enabled) return out(summary.note);
  if (summary.balance) {
    const { totalMicroCredits, givenMicroCredits, boughtMicroCredits } = summary.balance;
    out(`Balance:     ${usd(totalMicroCredits)} (${usd(givenMicroCredits)} given, ${usd(boughtMicroCredits)} bought)`);
  }
  if (summary.spendCap) {
    const cap = summary.spendCap.monthlyMicroCredits;
    out(`This month:  ${usd(summary.spendCap.spentThisMonthMicroCredits)} spent, ${cap === null ? "no cap" : `cap ${usd(cap)}`} (since ${summary.spendCap.monthStartsAt.slice(0, 10)}, ${summary.spendCap.timeZone})`);
  } else {
    out(`You spent ${usd(summary.yourSpendThisMonthMicroCredits)} this month.`);
  }
  out("");
  if (recent.length === 0) return out("No charges yet.");
  out(
    table(
      ["WHEN", "PERSON", "RUNTIME", "TOOL", "TIER", "ISSUE", "CHARGE"],
      recent.map((c) => [c.at.slice(0, 19).replace("T", " "), c.person?.email, c.runtime, c.tool, c.tier, c.issue, usd(c.microCredits)]),
    ),
  );
}

export async function billingBuy(flags: OrgFlags, positionals: string[]) {
  const pack = positionals[0]?.replace(/^\$/, "");
  if (!pack || positionals.length > 1 || !CREDIT_PACKS_USD.includes(pack)) {
    throw new CliError("INVALID_INPUT", `billing buy takes one pack: ${CREDIT_PACKS_USD.join(", ")} (US dollars)`, "retasc billing buy 25");
  }
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const checkout = await asSession<CheckoutReply>(session, "/billing", { body: { orgId, action: "buy", pack: Number(pack) } });
  if (flags.json) return printJson(checkout);
  note(`Pay $${pack} with Stripe Checkout at this URL; the credit shows in \`retasc billing\` once Stripe confirms the payment.`);
  out(checkout.url);
}

export async function billingCap(flags: OrgFlags, positionals: string[]) {
  const value = positionals[0]?.replace(/^\$/, "");
  const monthlyUsd = value === "off" ? null : Number(value);
  if (!value || positionals.length > 1 || (monthlyUsd !== null && !(Number.isFinite(monthlyUsd) && monthlyUsd >= 0))) {
    throw new CliError("INVALID_INPUT", "billing cap takes a monthly amount in US dollars, or off", "retasc billing cap 50   |   retasc billing cap off");
  }
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const cap = await asSession<CapReply>(session, "/billing", { body: { orgId, action: "cap", monthlyUsd } });
  if (flags.json) return printJson(cap);
  ok(cap.monthlyMicroCredits === null ? "Spend cap lifted." : `Monthly spend cap set to ${usd(cap.monthlyMicroCredits)}.`);
}
