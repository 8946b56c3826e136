import { describe, expect, it } from "vitest";
import { createIssueInput, editIssueInput, issueReferences } from "./forms.ts";

describe("the new-issue form's Blocked by", () => {
  it("reads issues as people type them, with the form's project for bare numbers", () => {
    expect(issueReferences("WEB 1, web-2 #3 WEB-4; 5  ops 6", "WEB", "Blocked by")).toEqual(["WEB-1", "WEB-2", "WEB-3", "WEB-4", "WEB-5", "OPS-6"]);
  });

  it("refuses what is not an issue in the form's words, with this project's prefix", () => {
    expect(() => issueReferences("WEB-1, the login bug", "WEB", "Blocked by")).toThrow(
      expect.objectContaining({ code: "INVALID_INPUT", message: 'Blocked by: "the", "login", "bug" is not an issue', hint: expect.stringContaining("WEB-4, web-4, WEB 4 or #4") }),
    );
  });

  it("sends the references as save_issue's blockedBy", () => {
    const form = new FormData();
    form.set("project", "WEB");
    form.set("dependency", "blockedBy");
    form.set("blockedBy", "WEB 1");
    expect(createIssueInput(form).blockedBy).toEqual(["WEB-1"]);
  });

  it("sends the kind of change a person picked, and none when they left it unsaid", () => {
    const form = new FormData();
    form.set("changeType", "");
    expect(createIssueInput(form).changeType).toBeUndefined();
    form.set("changeType", "docs");
    expect(createIssueInput(form).changeType).toBe("docs");
  });
});

describe("the edit form's kind of change", () => {
  it("sends a changeType only when the person picked another one, never a blank", () => {
    const form = new FormData();
    form.set("was.changeType", "");
    form.set("changeType", "");
    expect(editIssueInput("WEB-1", form)).toEqual({ identifier: "WEB-1" });
    form.set("changeType", "fix");
    expect(editIssueInput("WEB-1", form)).toEqual({ identifier: "WEB-1", changeType: "fix" });
    form.set("was.changeType", "fix");
    expect(editIssueInput("WEB-1", form)).toEqual({ identifier: "WEB-1" });
  });
});
