import crypto from "node:crypto";

/**
 * Ids that sort in the order they are made (UUIDv7 layout: the run's start millisecond, a
 * random run tag, then a counter). The export orders rows that share a timestamp by id, so
 * rows imported in export order come out of the next export in the same order.
 */
export function orderedIds(now: Date): () => string {
  const time = now.getTime().toString(16).padStart(12, "0");
  const tag = crypto.randomBytes(2).toString("hex").slice(0, 3);
  let counter = 0n;
  return () => {
    const n = (counter++).toString(16).padStart(15, "0");
    return `${time.slice(0, 8)}-${time.slice(8)}-7${tag}-8${n.slice(0, 3)}-${n.slice(3)}`;
  };
}
