import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Ctx } from "../context.ts";
import { startEmail } from "../notify/bindings.ts";
import { createInvite } from "../orgs/invites.ts";
import { emailInvite } from "../orgs/invite-mail.ts";
import { peopleOf, refusal } from "../orgs/testing.ts";
import { useTestServices } from "../testing/database.ts";
import { testConfig } from "../testing/db.ts";
import { startFakeSmtp, type FakeSmtp } from "../../test/fakes/smtp.ts";
import { seedOrg } from "../testing/fixtures.ts";

/**
 * Finding 5 of issue 37: confirmation codes and emailed invites go to an address someone typed,
 * so they were a way to flood anyone's inbox (40 mails to one address in 2.6 s). Each address
 * now gets at most RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR such mails an hour, and each client
 * address may send at most RATE_LIMIT_MAIL_PER_IP_PER_HOUR, whoever they go to.
 */
const env = useTestServices();
let smtp: FakeSmtp;
let alice: Ctx;
let bob: Ctx;
beforeAll(async () => {
  smtp = await startFakeSmtp();
  // One server's configuration for the whole file: the counters belong to it.
  const config = testConfig({ SMTP_URL: smtp.url, SMTP_FROM: "Retasc <retasc@example.com>", RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR: "5", RATE_LIMIT_MAIL_PER_IP_PER_HOUR: "12" });
  const { as } = await peopleOf(env.services, await seedOrg(env.services));
  alice = { ...as.alice, config };
  bob = { ...as.bob, config };
});
afterAll(() => smtp?.close());

describe("mail to an address someone typed", () => {
  it("confirmation codes: 40 asked for one victim address, from two people on two clients, reach it 5 times; the rest are RATE_LIMITED", async () => {
    const victim = "victim@example.com";
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        startEmail(i % 2 ? alice : bob, { email: i % 3 ? victim : victim.toUpperCase() }, { clientAddress: `198.51.100.${i % 2}` }).then(
          () => "sent",
          (e: { code: string }) => e.code,
        ),
      ),
    );
    expect(outcomes.filter((o) => o === "sent")).toHaveLength(5);
    expect(outcomes.filter((o) => o === "RATE_LIMITED")).toHaveLength(35);
    expect(smtp.mailsTo(victim)).toHaveLength(5);
    const refused = await refusal(startEmail(alice, { email: victim }, { clientAddress: "198.51.100.9" }));
    expect(refused).toMatchObject({ code: "RATE_LIMITED", message: "this address has been sent enough mail from Retasc for now", hint: expect.stringMatching(/^Try again in \d+ minutes?\.$/) });
  });

  it("emailed invites count against the same address, and the invite stands with the reason when it is not mailed", async () => {
    const invitee = "invitee@example.com";
    const results = [];
    for (let i = 0; i < 7; i++) {
      const invite = await createInvite(alice, { email: invitee });
      results.push(await emailInvite(alice, { inviteId: invite.inviteId, link: `https://retasc.example/join/${invite.code}` }, { clientAddress: "198.51.100.20" }));
    }
    expect(results.filter((r) => r.emailed)).toHaveLength(5);
    expect(results.slice(5)).toEqual([
      { emailed: false, reason: expect.stringMatching(/^this address has been sent enough mail from Retasc for now: Try again in/) },
      { emailed: false, reason: expect.stringMatching(/^this address has been sent enough mail/) },
    ]);
    expect(smtp.mailsTo(invitee)).toHaveLength(5);
  });

  it("one client address sends at most its share an hour, whoever the mail is for", async () => {
    const outcomes = [];
    for (let i = 0; i < 14; i++) {
      outcomes.push(await startEmail(alice, { email: `spread-${i}@example.com` }, { clientAddress: "203.0.113.7" }).then(() => "sent", (e: { code: string; message: string }) => `${e.code}: ${e.message}`));
    }
    expect(outcomes.slice(0, 12)).toEqual(Array(12).fill("sent"));
    expect(outcomes.slice(12)).toEqual(Array(2).fill("RATE_LIMITED: too many mails sent from your address"));
    // Another client is not held back by it.
    await startEmail(alice, { email: "spread-other@example.com" }, { clientAddress: "203.0.113.8" });
  });
});
