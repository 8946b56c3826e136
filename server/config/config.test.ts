import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./index.ts";

describe("loadConfig", () => {
  it("defaults to the embedded mode with no environment", () => {
    const config = loadConfig({});
    expect(config.mode).toBe("embedded");
    expect(config.PORT).toBe(3000);
    expect(config.leaseTtlMs).toBe(1_800_000);
    expect(config.RETASC_DATA_DIR).toBe(".retasc");
  });

  it("switches to the server mode when DATABASE_URL is set", () => {
    expect(loadConfig({ DATABASE_URL: "postgres://localhost/x" }).mode).toBe("server");
  });

  it("reads MCP_ALLOWED_ORIGINS as a list of origins, refusing a URL with a path", () => {
    expect(loadConfig({}).MCP_ALLOWED_ORIGINS).toEqual([]);
    expect(loadConfig({ MCP_ALLOWED_ORIGINS: " http://localhost:6274, https://inspector.example.com ," }).MCP_ALLOWED_ORIGINS).toEqual([
      "http://localhost:6274",
      "https://inspector.example.com",
    ]);
    for (const bad of ["https://inspector.example.com/", "https://x.example/app", "*", "ftp://x.example"]) {
      expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: bad }), bad).toThrow(/MCP_ALLOWED_ORIGINS/);
    }
  });

  it("names every bad variable in one message", () => {
    let error: unknown;
    try {
      loadConfig({ DATABASE_URL: "mysql://x", RETASC_MASTER_KEY: "short", LEASE_TTL_SECONDS: "0" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toContain("DATABASE_URL must start with postgres://");
    expect(message).toContain("RETASC_MASTER_KEY must be 32 bytes");
    expect(message).toContain("LEASE_TTL_SECONDS must be at least 1");
  });

  it("accepts a one-second lease for tests", () => {
    expect(loadConfig({ LEASE_TTL_SECONDS: "1" }).leaseTtlMs).toBe(1000);
  });
});
