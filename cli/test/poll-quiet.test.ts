import { expect, it } from "vitest";
import { PollQuiet } from "../src/poll-quiet.ts";

/** The proxy honours an empty next_issue's retryAfter (decision 076): it answers repeats itself until then. */
it("answers a repeated next_issue itself until retryAfter passes, and asks again after any other call", () => {
  const quiet = new PollQuiet();
  const empty = { claimed: false, ready: 0, otherLanes: 0, retryAfter: 10, message: "Nothing is claimable right now." };
  quiet.heard({}, empty, 1_000);
  expect(quiet.answer({}, 4_500)).toEqual({ ...empty, retryAfter: 7 });
  // Other arguments are another question; once the time has passed, the server is asked.
  expect(quiet.answer({ allLanes: true }, 4_500)).toBeUndefined();
  expect(quiet.answer({}, 11_000)).toBeUndefined();
  // Any other call (a release, a new issue) may have made work claimable.
  quiet.heard({}, empty, 20_000);
  quiet.clear();
  expect(quiet.answer({}, 20_001)).toBeUndefined();
  // A claim or a reply without retryAfter starts no quiet.
  quiet.heard({}, { claimed: true, identifier: "A-1" }, 30_000);
  expect(quiet.answer({}, 30_001)).toBeUndefined();
  quiet.heard({}, { claimed: false, ready: 0 }, 30_000);
  expect(quiet.answer({}, 30_001)).toBeUndefined();
});
