/** Polls `probe` until it returns a truthy value or `timeoutMs` passes; returns the value. */
export async function waitFor<T>(probe: () => Promise<T>, timeoutMs: number, what: string, everyMs = 50): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await probe();
    if (last) return last as NonNullable<T>;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
