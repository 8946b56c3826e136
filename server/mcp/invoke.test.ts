import { describe, expect, test } from "vitest";
import { z } from "zod";
import { createLogger } from "../log.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { invokeTool } from "./invoke.ts";
import { tools } from "./registry.ts";
import { inProcessFetch, inProcessOrigin } from "./testing.ts";
import { defineTool, readOnly } from "./tool.ts";

const env = useTestServices();

/** One tools/call over the whole /mcp path, its body written by hand so `__proto__` stays an own key. */
async function rawCall(key: string, name: string, argumentsJson: string) {
  const response = await inProcessFetch(env.services)(`${inProcessOrigin}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${key}` },
    body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":${argumentsJson}}}`,
  });
  expect(response.status).toBe(200);
  return (await response.json()).result as { isError?: boolean; structuredContent: Record<string, any> };
}

describe("tool arguments", () => {
  test("a __proto__ key is refused as an unknown argument, on every tool, whatever it holds", async () => {
    const org = await seedOrg(env.services);
    const keyId = org.agents.bob.principal.keyId!;
    const calls: [string, string][] = [
      ["retire_member", `{"memberId":"${keyId}","__proto__":{"memberId":"other"}}`],
      ...tools.map((tool): [string, string] => [tool.name, `{"__proto__":{}}`]),
    ];
    for (const [tool, args] of calls) {
      const result = await rawCall(org.agents.bob.key, tool, args);
      expect(result.isError, tool).toBe(true);
      expect(result.structuredContent.error, tool).toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("unknown argument __proto__") });
    }
    // Nothing was done: bob's agent is still live.
    expect((await rawCall(org.agents.bob.key, "whoami", "{}")).structuredContent.key.id).toBe(keyId);
  });

  test("the handler gets the parsed arguments (defaults applied, transforms run), not the raw ones", async () => {
    const org = await seedOrg(env.services);
    let received: unknown;
    const echo = defineTool({
      name: "echo",
      title: "Echo",
      group: "observability",
      description: "test only",
      input: z.object({ name: z.string().trim().toUpperCase(), n: z.number().default(3) }),
      output: z.object({}),
      annotations: readOnly,
      handler: async (_ctx, input) => {
        received = input;
        return {};
      },
    });
    const scope = { services: env.services, principal: org.agents.alice.principal, log: createLogger("silent"), requestId: "r" };
    const result = await invokeTool(scope, echo, JSON.parse(`{"name":"  ada "}`));
    expect(result.isError).toBeUndefined();
    expect(received).toEqual({ name: "ADA", n: 3 });
    expect(Object.getPrototypeOf(received)).toBe(Object.prototype);
  });
});
