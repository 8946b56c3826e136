import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createLogger } from "../log.ts";
import { handleMcpNodeRequest, handleMcpRequest } from "./http.ts";
import { call, initialize, jsonHeaders, useMcpServices } from "./testing.ts";

/**
 * The Node entry point (handleMcpNodeRequest, over a real socket) must answer as the Fetch one
 * (handleMcpRequest) does, headers included; protocol-parity.test.ts holds the Fetch one to the SDK.
 */
const log = createLogger("silent");
const requestId = "parity-1";
const world = useMcpServices();

describe("the Node entry point answers as the Fetch one", () => {
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    server = http.createServer((req, res) => void handleMcpNodeRequest(req, res, { services: world.services, log }));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const key = () => world.org.agents.alice.key;
  const authorized = () => ({ ...jsonHeaders, authorization: `Bearer ${key()}` });
  const cases: [string, () => RequestInit][] = [
    ["a tool call", () => ({ method: "POST", headers: authorized(), body: JSON.stringify(call("get_issue", { identifier: world.identifier })) })],
    ["a notification (202)", () => ({ method: "POST", headers: authorized(), body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })],
    ["no key", () => ({ method: "POST", headers: jsonHeaders, body: JSON.stringify(initialize) })],
    ["an unknown key", () => ({ method: "POST", headers: { ...jsonHeaders, authorization: `Bearer rtsc_${"x".repeat(43)}` }, body: JSON.stringify(initialize) })],
    ["a foreign origin", () => ({ method: "POST", headers: { ...authorized(), origin: "https://evil.example" }, body: JSON.stringify(initialize) })],
    ["its own origin", () => ({ method: "POST", headers: { ...authorized(), origin: new URL(url).origin }, body: JSON.stringify(initialize) })],
    ["GET", () => ({ method: "GET", headers: { accept: "text/event-stream", authorization: `Bearer ${key()}` } })],
    ["DELETE", () => ({ method: "DELETE", headers: { authorization: `Bearer ${key()}` } })],
    ["a body over the limit", () => ({ method: "POST", headers: authorized(), body: JSON.stringify({ ...initialize, padding: "x".repeat(5000) }) })],
    ["not JSON", () => ({ method: "POST", headers: authorized(), body: "{nope" })],
  ];

  test.each(cases)("%s", async (_name, lazy) => {
    const given = lazy();
    const init = { ...given, headers: { ...(given.headers as Record<string, string>), "x-request-id": requestId } };
    const overSocket = await fetch(url, init);
    const inProcess = await handleMcpRequest(new Request(url, init), { services: world.services, log });
    const comparable = async (response: Response) => ({
      status: response.status,
      headers: [...response.headers].filter(([name]) => !["date", "connection", "keep-alive", "content-length", "transfer-encoding"].includes(name)),
      body: await response.text(),
    });
    expect(await comparable(overSocket)).toEqual(await comparable(inProcess));
  });

  test("a streamed body over the limit gets 413 and the connection is closed", async () => {
    const chunk = new TextEncoder().encode("x".repeat(1000));
    let sent = 0;
    const response = await fetch(url, {
      method: "POST",
      headers: { ...jsonHeaders, authorization: `Bearer ${key()}` },
      body: new ReadableStream({
        pull(controller) {
          if (sent++ < 10) controller.enqueue(chunk);
          else controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(response.headers.get("connection")).toBe("close");
    expect((await response.json()).error.message).toMatch(/4096 bytes/);
  });

  test("repeated headers are joined as a Fetch Headers joins them: two keys are no key", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(url, {
        method: "POST",
        headers: ["host", new URL(url).host, "content-type", "application/json", "accept", jsonHeaders.accept, "authorization", `Bearer ${key()}`, "authorization", `Bearer ${key()}`],
      }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on("error", reject);
      req.end(JSON.stringify(initialize));
    });
    expect(status).toBe(401);
  });
});
