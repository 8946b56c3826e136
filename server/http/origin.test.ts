import { describe, expect, test } from "vitest";
import { publicBaseUrl, publicOrigin } from "./origin.ts";
import { routePath } from "./path.ts";

describe("routePath: the path routing will serve", () => {
  test.each([
    ["/mcp", "/mcp"],
    ["/mcp?x=1#y", "/mcp"],
    ["/", "/"],
    ["/.well-known/mcp.json", "/.well-known/mcp.json"],
    ["/api/auth/./sign-in/email", "/api/auth/sign-in/email"],
    ["/x/../api/auth/sign-in/email", "/api/auth/sign-in/email"],
    ["/api/auth/%2e%2E/auth/sign-in", "/api/auth/sign-in"],
    ["/Auth/Sign-In/", "/auth/sign-in"],
    ["/auth//sign-in", "/auth/sign-in"],
    ["/auth\\sign-in", "/auth/sign-in"],
    ["/api/auth/%73ign-in/email", "/api/auth/sign-in/email"],
    ["/dash/events.data", "/dash/events.data"],
  ])("%s → %s", (target, path) => {
    expect(routePath(target)).toBe(path);
  });

  test.each(["/%", "/assets/%zz", "//evil.example/x", "/\\evil.example", "http://evil.example/x", "*", ""])("%s has none", (target) => {
    expect(routePath(target)).toBeNull();
  });
});

describe("publicOrigin", () => {
  test("without PUBLIC_URL: the loopback names on PORT, and absolute URLs on the one the request used", () => {
    const config = { PUBLIC_URL: undefined, PORT: 3000 };
    expect([...publicOrigin(config).hosts]).toEqual(["localhost:3000", "127.0.0.1:3000", "[::1]:3000"]);
    expect(publicOrigin(config).trustedOrigins).toEqual(["http://localhost:3000", "http://127.0.0.1:3000", "http://[::1]:3000"]);
    expect(publicBaseUrl("http://127.0.0.1:3000/x", config)).toBe("http://127.0.0.1:3000");
    // A name the edge would have refused never becomes a link.
    expect(publicBaseUrl("http://evil.example/x", config)).toBe("http://localhost:3000");
  });

  test("with PUBLIC_URL under a path: its host and origin are trusted, links keep the path", () => {
    const config = { PUBLIC_URL: "https://Retasc.example/base/", PORT: 8080 };
    expect(publicOrigin(config).hosts.has("retasc.example")).toBe(true);
    expect(publicOrigin(config).trustedOrigins).toContain("https://retasc.example");
    expect(publicBaseUrl("http://127.0.0.1:8080/x", config)).toBe("https://retasc.example/base");
  });
});
