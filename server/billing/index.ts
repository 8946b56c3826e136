/**
 * Billing: credit, the ledger, the cap (docs/decisions/016-credit-slices.md). The meter itself
 * (charging each write in its transaction) and the credit primitive live in server/usage, so
 * every domain that writes can charge without importing this one (which reads server/orgs).
 * Purchases through Stripe: purchases.ts and stripe/.
 */
export { addCredit, balanceOf, grantSignupCredit, type CreditEntry } from "../usage/credit.ts";
export { billingEnabled, billingPagePath } from "../usage/meter.ts";
export { billingSummary, billingSummaryInput, monthOf, setSpendCap, setSpendCapInput, spendCapOf } from "./summary.ts";
export { listLedger, listLedgerInput } from "./ledger.ts";
