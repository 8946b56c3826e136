import { Form, Link, redirect } from "react-router";
import type { Route } from "./+types/dash.settings.billing";
import { requireMember } from "../auth.server.ts";
import { attempt } from "../errors.server.ts";
import { readForm } from "../forms.server.ts";
import { billingSummary, listLedger, setSpendCap } from "../../server/billing/index.ts";
import { usageSummary } from "../../server/usage/index.ts";
import { buyCredit, CREDIT_PACKS_USD } from "../../server/billing/purchases.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { findPeople, peopleNamed } from "../../server/orgs/members.ts";
import { pickerQuery } from "../../server/orgs/people-pickers.ts";
import { Button, Card, ErrorNote, Field, Notice, Select } from "../components/ui.tsx";
import { PersonSearch } from "../components/dash/person-search.tsx";

export function meta() {
  return [{ title: "Billing · Retasc" }];
}

const FILTERS = ["person", "runtime", "tool", "day"] as const;

/** Owners and admins: the org's balance, cap, purchases and ledger (owners buy and set the cap). Members: their own usage. */
export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx, membership } = await requireMember(request, context);
  const params = new URL(request.url).searchParams;
  const filters = Object.fromEntries(FILTERS.flatMap((name) => (params.get(name) ? [[name, params.get(name)!]] : [])));
  const seesAll = membership.role !== "member";
  const q = pickerQuery(params.get("q"));
  // The person menu offers one page of people matching `q` (the search finds anyone else), and the person filtered on wherever they sort.
  const [summary, usage, listed, found, named] = await Promise.all([
    billingSummary(ctx, {}),
    usageSummary(ctx, {}),
    // Filters come from the URL: a bad one is said on the page, over an empty ledger.
    attempt(context.log, () => listLedger(ctx, { ...filters, cursor: params.get("cursor") ?? undefined })),
    seesAll ? findPeople(ctx, { q, includeSuspended: true }) : { people: [], nextCursor: undefined },
    seesAll && filters.person ? peopleNamed(ctx, [filters.person], { includeSuspended: true }) : [],
  ]);
  const ledger = listed.ok ? listed.value : { entries: [], nextCursor: null };
  const person = filters.person ? { value: filters.person, label: named[0]?.email ?? `${filters.person} (not in this org)` } : null;
  const people = [...(person ? [person] : []), ...found.people.flatMap((p) => (p.userId === named[0]?.userId ? [] : [{ value: p.userId, label: p.email }]))];
  return {
    summary,
    byChangeType: usage.byChangeType,
    ledger,
    ledgerError: listed.error ?? null,
    people,
    peopleShown: found.people.length,
    morePeople: found.nextCursor !== undefined,
    q,
    packs: CREDIT_PACKS_USD,
    filters,
    paged: params.has("cursor"),
    role: membership.role,
    checkout: params.get("checkout"),
  };
}

export async function action({ request, context }: Route.ActionArgs) {
  const { ctx } = await requireMember(request, context);
  const form = await readForm(request);
  const intent = String(form.get("intent") ?? "");
  if (intent === "buy") {
    const bought = await attempt(context.log, () => buyCredit(ctx, { pack: form.get("pack") }, { baseUrl: publicBaseUrl(request, context.services.config) }));
    // To Stripe Checkout; the signed webhook credits the org once the payment is through.
    return bought.ok ? redirect(bought.value.url) : { error: bought.error };
  }
  const result = await attempt(context.log, async () => {
    switch (intent) {
      case "cap": {
        const cap = await setSpendCap(ctx, { monthlyUsd: Number(form.get("monthlyUsd")) });
        return { done: `Monthly spend cap set to ${usd(cap.monthlyMicroCredits ?? 0)}.` };
      }
      case "cap-off":
        await setSpendCap(ctx, { monthlyUsd: null });
        return { done: "Spend cap lifted." };
      default:
        return {};
    }
  });
  return result.ok ? { ...result.value, error: null } : { error: result.error };
}

/** Micro-credits as dollars: 1,000,000 = $1; sub-cent amounts keep their digits. */
function usd(microCredits: number): string {
  const dollars = microCredits / 1_000_000;
  const digits = Number.isInteger(dollars * 100) ? 2 : 4;
  return `${dollars < 0 ? "−" : ""}$${Math.abs(dollars).toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })}`;
}

export default function Billing({ loaderData, actionData }: Route.ComponentProps) {
  const { summary, byChangeType, ledger, ledgerError, people, peopleShown, morePeople, q, packs, filters, paged, role, checkout } = loaderData;
  const seesAll = role !== "member";
  const notice = actionData && "done" in actionData ? actionData.done : null;
  const nextPage = ledger.nextCursor ? `?${new URLSearchParams({ ...filters, cursor: ledger.nextCursor })}` : null;
  return (
    <div className="flex flex-col gap-8">
      <h1 className="text-2xl font-semibold">Billing</h1>
      <p className="text-sm text-stone-700" data-testid="billing-note">{summary.note}</p>
      <ErrorNote error={actionData?.error} />
      {notice ? <Notice>{notice}</Notice> : null}
      {checkout === "paid" ? <Notice>Payment received. The credit shows here as soon as Stripe confirms it.</Notice> : null}
      {checkout === "canceled" ? <Notice>Checkout canceled; nothing was charged.</Notice> : null}

      {summary.enabled && summary.balance && summary.spendCap ? (
        <div className="grid gap-6 md:grid-cols-2">
          <Card title="Balance">
            <dl className="grid grid-cols-2 gap-2 text-sm">
              <dt>Total</dt>
              <dd className="text-right text-lg font-semibold" data-testid="balance-total">{usd(summary.balance.totalMicroCredits)}</dd>
              <dt>Given (spent first)</dt>
              <dd className="text-right" data-testid="balance-given">{usd(summary.balance.givenMicroCredits)}</dd>
              <dt>Bought</dt>
              <dd className="text-right" data-testid="balance-bought">{usd(summary.balance.boughtMicroCredits)}</dd>
            </dl>
            {role === "owner" ? (
              <Form method="post" className="mt-4 flex flex-wrap items-center gap-2" aria-label="Buy credit">
                <input type="hidden" name="intent" value="buy" />
                <span className="text-sm font-medium">Buy credit</span>
                {packs.map((pack) => (
                  <Button key={pack} name="pack" value={String(pack)} tone="secondary" aria-label={`Buy $${pack} of credit`}>
                    ${pack}
                  </Button>
                ))}
              </Form>
            ) : (
              <p className="mt-2 text-xs text-stone-600">Owners buy credit.</p>
            )}
          </Card>
          <Card title="This month">
            <p className="text-sm" data-testid="month-spend">
              Spent {usd(summary.spendCap.spentThisMonthMicroCredits)}
              {summary.spendCap.monthlyMicroCredits === null ? ", no cap" : ` of a ${usd(summary.spendCap.monthlyMicroCredits)} cap`} since{" "}
              {new Date(summary.spendCap.monthStartsAt).toLocaleDateString("en-US", { timeZone: summary.spendCap.timeZone, dateStyle: "medium" })} ({summary.spendCap.timeZone}).
            </p>
            {role === "owner" ? (
              <div className="mt-4 flex flex-wrap items-end gap-2">
                <Form method="post" className="flex items-end gap-2">
                  <Field label="Monthly cap (USD)" name="monthlyUsd" type="number" required defaultValue={summary.spendCap.monthlyMicroCredits === null ? "" : String(summary.spendCap.monthlyMicroCredits / 1_000_000)} />
                  <Button name="intent" value="cap">Set cap</Button>
                </Form>
                {summary.spendCap.monthlyMicroCredits !== null ? (
                  <Form method="post">
                    <Button name="intent" value="cap-off" tone="secondary">Lift cap</Button>
                  </Form>
                ) : null}
              </div>
            ) : (
              <p className="mt-2 text-xs text-stone-600">Owners set the cap.</p>
            )}
          </Card>
        </div>
      ) : summary.enabled ? (
        <p className="text-sm" data-testid="your-spend">You spent {usd(summary.yourSpendThisMonthMicroCredits)} this month.</p>
      ) : null}

      {summary.enabled && byChangeType.length > 0 ? (
        <table className="w-full border-collapse text-left text-sm" data-testid="by-change-type">
          <caption className="mb-2 text-left text-lg font-semibold">Your spend this month by kind of change</caption>
          <thead>
            <tr className="border-b border-stone-300">
              <th scope="col" className="py-2">Kind of change</th>
              <th scope="col" className="text-right">Writes</th>
              <th scope="col" className="text-right">Charged</th>
            </tr>
          </thead>
          <tbody>
            {byChangeType.map((row) => (
              <tr key={row.changeType} className="border-b border-stone-200">
                <td className="py-2">{row.changeType}</td>
                <td className="text-right">{row.writes}</td>
                <td className="text-right">{usd(row.microCredits)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}

      {summary.enabled && seesAll ? (
        <p className="text-sm text-stone-600">
          The org's cost by kind of change and by runtime, over a range you choose, is on the <Link className="underline" to="/dash/analytics">Analytics</Link> page.
        </p>
      ) : null}

      {seesAll && summary.purchases.length > 0 ? (
        <table className="w-full border-collapse text-left text-sm" data-testid="purchases">
          <caption className="mb-2 text-left text-lg font-semibold">Purchases</caption>
          <thead>
            <tr className="border-b border-stone-300">
              <th scope="col" className="py-2">Date</th>
              <th scope="col">Pack</th>
              <th scope="col">Status</th>
              <th scope="col">Refunded</th>
              <th scope="col">Receipt</th>
            </tr>
          </thead>
          <tbody>
            {summary.purchases.map((p) => (
              <tr key={p.purchaseId} className="border-b border-stone-200" data-purchase={p.purchaseId}>
                <td className="py-2">{new Date(p.paidAt ?? p.createdAt).toLocaleString()}</td>
                <td>${p.packUsd}</td>
                <td>{p.status}</td>
                <td>{p.reversedMicroCredits ? usd(p.reversedMicroCredits) : "—"}</td>
                <td>{p.receiptUrl ? <a className="underline" href={p.receiptUrl} rel="noreferrer noopener" target="_blank">Receipt</a> : "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}

      {summary.enabled ? (
        <section aria-label="Ledger" className="flex flex-col gap-3">
          <h2 className="text-lg font-semibold">{seesAll ? "Ledger" : "Your usage"}</h2>
          <Form method="get" className="flex flex-wrap items-end gap-3" aria-label="Filter the ledger">
            {seesAll ? (
              <>
                <PersonSearch q={q} shown={peopleShown} more={morePeople} />
                <Select label="Person" name="person" defaultValue={filters.person ?? ""} options={[{ value: "", label: "anyone" }, ...people]} />
              </>
            ) : null}
            <Field label="Runtime" name="runtime" defaultValue={filters.runtime ?? ""} placeholder="claude-code" />
            <Field label="Tool" name="tool" defaultValue={filters.tool ?? ""} placeholder="next_issue" />
            <Field label="Day" name="day" type="date" defaultValue={filters.day ?? ""} />
            <Button tone="secondary">Filter</Button>
          </Form>
          <ErrorNote error={ledgerError} />
          {ledger.entries.length === 0 ? (
            <p className="text-sm text-stone-600">No charges{Object.keys(filters).length ? " match these filters" : " yet"}.</p>
          ) : (
            <table className="w-full border-collapse text-left text-sm" data-testid="ledger">
              <caption className="sr-only">Charges, newest first</caption>
              <thead>
                <tr className="border-b border-stone-300">
                  <th scope="col" className="py-2">When</th>
                  <th scope="col">Person</th>
                  <th scope="col">Runtime</th>
                  <th scope="col">Tool</th>
                  <th scope="col">Tier</th>
                  <th scope="col">Issue</th>
                  <th scope="col" className="text-right">Charge</th>
                </tr>
              </thead>
              <tbody>
                {ledger.entries.map((e, i) => (
                  <tr key={`${e.at}-${i}`} className="border-b border-stone-200">
                    <td className="py-2">{new Date(e.at).toLocaleString()}</td>
                    <td>{e.person?.email ?? "—"}</td>
                    <td>{e.runtime ?? "—"}</td>
                    <td className="font-mono">{e.tool}</td>
                    <td>{e.tier}</td>
                    <td>{e.issue ?? "—"}</td>
                    <td className="text-right">{usd(e.microCredits)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <nav aria-label="Ledger pages" className="flex gap-4 text-sm">
            {paged ? <Link className="underline" to={`?${new URLSearchParams(filters)}`}>First page</Link> : null}
            {nextPage ? <Link className="underline" to={nextPage}>Next page</Link> : null}
          </nav>
        </section>
      ) : null}
    </div>
  );
}
