import { describe, expect, it } from "vitest";
import { authenticateAgentKey } from "../orgs/index.ts";
import { bootstrap, mintKey } from "./commands.ts";
import { useTestServices } from "../testing/database.ts";

const env = useTestServices();

describe("operator commands", () => {
  it("bootstrap prints orgId, projectId, userId and a key that authenticates by hash", async () => {
    const result = await bootstrap(env.services, { org: "Acme", project: "Web", prefix: "web", email: "Owner@Example.com" });
    expect(Object.keys(result).sort()).toEqual(["key", "orgId", "projectId", "userId"]);
    expect(result.key).toMatch(/^rtsc_[A-Za-z0-9_-]{40,}$/);
    const principal = await authenticateAgentKey(env.services.db, result.key);
    expect(principal).toMatchObject({ orgId: result.orgId, projectId: result.projectId, userId: result.userId });
    expect(await authenticateAgentKey(env.services.db, result.key + "x")).toBeNull();
  });

  it("mint-key adds the person as a member and their key authenticates", async () => {
    const { orgId, projectId } = await bootstrap(env.services, { org: "B", project: "P", prefix: "BB", email: "o@b.example" });
    const minted = await mintKey(env.services, { org: orgId, email: "new@b.example", runtime: "codex" });
    expect(Object.keys(minted).sort()).toEqual(["key", "userId"]);
    const principal = await authenticateAgentKey(env.services.db, minted.key);
    expect(principal).toMatchObject({ orgId, projectId, userId: minted.userId, runtime: "codex" });
  });

  it("refuses an unknown org clearly", async () => {
    await expect(mintKey(env.services, { org: "nope", email: "x@y.example", runtime: "r" })).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
  });
});
