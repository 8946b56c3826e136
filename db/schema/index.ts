export * from "./auth.ts";
export * from "./orgs.ts";
export * from "./issues.ts";
export * from "./activity.ts";
export * from "./accounts.ts";
export * from "./intake.ts";
export * from "./attachment-files.ts";
export * from "./billing.ts";
