/** Reruns a transaction (or a one-statement write) that hit a deadlock, a serialization failure or RetryTransaction. */
export async function retryingConflicts<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      const code = (error as { code?: string; cause?: { code?: string } }).code ??
        (error as { cause?: { code?: string } }).cause?.code;
      if ((code === "40P01" || code === "40001" || error instanceof RetryTransaction) && attempt < 8) {
        await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
        continue;
      }
      throw error;
    }
  }
}

/** Thrown inside a transaction when what it read changed under it; the transaction reruns. */
export class RetryTransaction extends Error {}
