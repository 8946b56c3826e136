import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testConfig } from "../testing/db.ts";
import { isPublicAddress, outboundAgent, outboundRefusalOf, requireOutboundUrl } from "./address.ts";

/**
 * The outbound guard. Private and metadata literals are decided without connecting anywhere;
 * the requests that really go out go to local servers on loopback ports only.
 */
describe("isPublicAddress", () => {
  it("refuses loopback, private, link-local, CGNAT, multicast, reserved and metadata addresses, IPv4-mapped IPv6 included", () => {
    for (const address of [
      "127.0.0.1", "127.255.255.254", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
      "169.254.169.254", "169.254.0.1", "100.64.0.1", "100.127.255.255", "224.0.0.1", "239.255.255.250", "240.0.0.1",
      "255.255.255.255", "198.18.0.1", "192.0.2.1",
      "::1", "::", "[::1]", "fe80::1", "fe80::1%eth0", "fc00::1", "fd12:3456::1", "ff02::1",
      "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:169.254.169.254", "::ffff:a9fe:a9fe", "::ffff:10.0.0.1", "[::ffff:192.168.0.1]",
      "::127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "2002:7f00:1::", "2001:db8::1", "2001:0:4136:e378::1",
      "not an address", "", "localhost",
    ]) {
      expect(isPublicAddress(address), address).toBe(false);
    }
  });

  it("lets public addresses through", () => {
    for (const address of ["1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.1", "172.32.0.1", "169.255.0.1", "2606:4700:4700::1111", "::ffff:1.1.1.1", "2a00:1450:4001::200e"]) {
      expect(isPublicAddress(address), address).toBe(true);
    }
  });
});

describe("requireOutboundUrl", () => {
  const config = testConfig();
  const refusal = async (url: string) =>
    requireOutboundUrl(config, url, "baseUrl").then(
      () => null,
      (error: { code: string; message: string }) => `${error.code}: ${error.message}`,
    );

  it("refuses what is not https to a public address, naming the field and the reason (literals need no lookup)", async () => {
    expect(await refusal("http://gitlab.example.com")).toMatch(/^INVALID_INPUT: baseUrl: only https/);
    expect(await refusal("https://169.254.169.254")).toBe("INVALID_INPUT: baseUrl: 169.254.169.254 is not a public address");
    expect(await refusal("https://[::ffff:127.0.0.1]:8443")).toMatch(/^INVALID_INPUT: baseUrl: \[::ffff:7f00:1\] is not a public address/);
    // WHATWG URL turns the other spellings of an IPv4 address into the dotted one first.
    expect(await refusal("https://2130706433")).toMatch(/127\.0\.0\.1 is not a public address/);
    expect(await refusal("https://0x7f.1")).toMatch(/127\.0\.0\.1 is not a public address/);
    expect(await refusal("https://100.64.1.1/gitlab")).toMatch(/100\.64\.1\.1 is not a public address/);
    expect(await refusal("https://user:pw@gitlab.example.com")).toMatch(/user name or password/);
    expect(await refusal("ftp://gitlab.example.com")).toMatch(/only https/);
    expect(await refusal("https://1.1.1.1")).toBeNull();
  });

  it("decides on the addresses a name resolves to: localhost is loopback", async () => {
    expect(await refusal("https://localhost:8443")).toMatch(/^INVALID_INPUT: baseUrl: localhost resolves to (127\.0\.0\.1|::1), which is not a public address/);
  });

  it("lets through exactly the host:port pairs the operator lists, under either variable's name", async () => {
    const allowing = testConfig({ RETASC_OUTBOUND_ALLOW_HOSTS: "127.0.0.1:8080, [::1]:9000", RETASC_IMPORT_ALLOW_HOSTS: "localhost:7000" });
    for (const url of ["http://127.0.0.1:8080", "https://127.0.0.1:8080/x", "http://[::1]:9000", "http://[0:0::1]:9000", "http://localhost:7000"]) {
      await expect(requireOutboundUrl(allowing, url, "baseUrl"), url).resolves.toBeUndefined();
    }
    for (const url of ["http://127.0.0.1:8081", "http://127.0.0.1", "http://localhost:8080", "http://[::1]:9001"]) {
      await expect(requireOutboundUrl(allowing, url, "baseUrl"), url).rejects.toMatchObject({ code: "INVALID_INPUT" });
    }
    expect(() => testConfig({ RETASC_OUTBOUND_ALLOW_HOSTS: "127.0.0.1" })).toThrow(/RETASC_OUTBOUND_ALLOW_HOSTS\.0 must be host:port/);
    expect(() => testConfig({ RETASC_OUTBOUND_ALLOW_HOSTS: "http://127.0.0.1:80" })).toThrow(/RETASC_OUTBOUND_ALLOW_HOSTS/);
  });
});

describe("outboundAgent", () => {
  // Two local servers, each recording what reaches it; `redirect` sends every request on to `target`.
  const seen = { redirect: [] as string[], target: [] as string[] };
  let redirect: http.Server;
  let target: http.Server;
  const portOf = (server: http.Server) => (server.address() as AddressInfo).port;
  beforeAll(async () => {
    target = http.createServer((req, res) => {
      seen.target.push(`${req.url} ${req.headers["private-token"] ?? ""}`);
      res.end("target");
    });
    redirect = http.createServer((req, res) => {
      seen.redirect.push(`${req.url} ${req.headers["private-token"] ?? ""}`);
      if (req.url === "/same") res.writeHead(302, { location: "/final" }).end();
      else if (req.url === "/final") res.end("final");
      else res.writeHead(302, { location: `http://127.0.0.1:${portOf(target)}${req.url}` }).end();
    });
    await Promise.all([target, redirect].map((s) => new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve))));
  });
  afterAll(() => {
    redirect.close();
    target.close();
  });

  const call = async (config: ReturnType<typeof testConfig>, url: string) => {
    const agent = outboundAgent(config, new URL(url).origin);
    try {
      const response = await fetch(url, { dispatcher: agent, headers: { "private-token": "glpat-secret" } } as RequestInit);
      return `${response.status} ${await response.text()}`;
    } catch (error) {
      return `refused: ${outboundRefusalOf(error)?.message ?? String(error)}`;
    } finally {
      await agent.close();
    }
  };

  it("never connects to a private address that is not allowed, by literal or by name", async () => {
    const config = testConfig();
    expect(await call(config, `http://127.0.0.1:${portOf(target)}/x`)).toMatch(/^refused: only https/);
    expect(await call(config, `https://127.0.0.1:${portOf(target)}/x`)).toBe("refused: 127.0.0.1 is not a public address");
    expect(await call(config, `https://localhost:${portOf(target)}/x`)).toMatch(/^refused: localhost resolves to (127\.0\.0\.1|::1)/);
    expect(seen.target).toEqual([]);
  });

  it("follows a redirect within the allowed host, and refuses one that leaves it: the token never reaches the other port", async () => {
    const config = testConfig({ RETASC_OUTBOUND_ALLOW_HOSTS: `127.0.0.1:${portOf(redirect)}` });
    expect(await call(config, `http://127.0.0.1:${portOf(redirect)}/same`)).toBe("200 final");
    expect(await call(config, `http://127.0.0.1:${portOf(redirect)}/away`)).toBe(`refused: a redirect to 127.0.0.1:${portOf(target)} left 127.0.0.1:${portOf(redirect)}`);
    expect(seen.redirect).toEqual(["/same glpat-secret", "/final glpat-secret", "/away glpat-secret"]);
    expect(seen.target).toEqual([]);
  });
});
