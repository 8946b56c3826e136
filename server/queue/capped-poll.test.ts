import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { saveIssue } from "../issues/index.ts";
import { useTestServices } from "../testing/database.ts";
import { testDriver } from "../testing/db.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { nextIssue } from "./index.ts";

/**
 * A key at its claim cap is refused CLAIM_CAP without locking the issue it would have taken: a
 * pick skips locked rows, so a capped poll that locked the top of the order (and a batch of polls
 * holds its locks until the batch commits) made every other agent's pick pass over it. The swarm
 * caught it as a dispatch out of order while a capped shared key polled.
 */
const env = useTestServices();

describe.skipIf(testDriver !== "postgres")("a capped poll", () => {
  it("leaves the top of the order to the others while its transaction is still open", async () => {
    const org = await seedOrg(env.services);
    const { alice, bob } = org.agents;
    const top = await saveIssue(alice.ctx, { title: "urgent", work: true, changeType: "fix", noDependency: "standalone", priority: 1 });
    await saveIssue(alice.ctx, { title: "later", work: true, changeType: "fix", noDependency: "standalone", priority: 4 });

    // Alice's key polls with a cap of 0 (it holds its cap) in a transaction left open, as a batch of polls does.
    const held = postgres(env.tdb.url!, { max: 1, onnotice: () => {} });
    try {
      const answer = await held.begin(async (tx) => {
        const [row] = await tx`select retasc_next_issue(${org.orgId}, null, false, false, 0, ${alice.userId}, ${alice.principal.keyId},
          'capped', now(), 'lease-capped', 'hash-capped', 60000, null, null, null) as result`;
        // Bob's pick, on another connection, while alice's transaction is open.
        const bobs = await nextIssue(bob.ctx, {});
        return { capped: row!.result as { outcome: string }, bobs };
      });
      expect(answer.capped.outcome).toBe("cap");
      expect("identifier" in answer.bobs && answer.bobs.identifier).toBe((top as { identifier: string }).identifier);
    } finally {
      await held.end({ timeout: 5 });
    }
  });
});
