import { eq } from "drizzle-orm";
import { user } from "../../db/schema/index.ts";
import type { TestDatabase } from "./db.ts";

/**
 * Marks a person's email verified, as a social sign-in or a mailed link would: no door of the app
 * does it for an address signed up with a password, and claiming an import's placeholder needs it.
 */
export async function markEmailVerified(database: TestDatabase, email: string): Promise<void> {
  await database.database.db.update(user).set({ emailVerified: true }).where(eq(user.email, email));
}
