import { describe, expect, it } from "vitest";
import { safeNext } from "./auth.server.ts";

describe("safeNext", () => {
  it("keeps a path on this site, as the browser will read it", () => {
    expect(safeNext("/dash/issues/WEB-1?tab=log#top")).toBe("/dash/issues/WEB-1?tab=log#top");
    expect(safeNext("/device?user_code=ABCD-EFGH")).toBe("/device?user_code=ABCD-EFGH");
    expect(safeNext("/dash/../device")).toBe("/device");
    // Encoded slashes and backslashes stay encoded: a browser does not decode them in a Location.
    expect(safeNext("/%2F%2Fevil.example")).toBe("/%2F%2Fevil.example");
    expect(safeNext("/%5Cevil.example")).toBe("/%5Cevil.example");
    expect(safeNext("/%09/evil.example")).toBe("/%09/evil.example");
  });

  it.each([
    ["a tab the browser drops", "/\t/127.0.0.1:9999/x"],
    ["a newline the browser drops", "/\n/evil.example"],
    ["a carriage return", "/\r/evil.example"],
    ["a backslash read as a slash", "/\\evil.example"],
    ["a backslash after a tab", "/\t\\evil.example"],
    ["a protocol-relative URL", "//evil.example"],
    ["three slashes", "///evil.example"],
    ["dot segments collapsing to //", "/.//evil.example"],
    ["dot segments after a folder", "/dash/..//evil.example"],
    ["an absolute URL", "https://evil.example/"],
    ["a javascript: URL", "javascript:alert(1)"],
    ["a relative path", "dash"],
    ["nothing", ""],
  ])("turns %s into the fallback", (_, value) => {
    expect(safeNext(value)).toBe("/dash");
    expect(safeNext(value, "/")).toBe("/");
  });

  it("falls back for a missing value", () => {
    expect(safeNext(null)).toBe("/dash");
    expect(safeNext(undefined, "/device")).toBe("/device");
  });
});
