import type { Config } from "@react-router/dev/config";

// RETASC_BUILD_DIR lets test runs build into their own directory while another build serves.
export default { ssr: true, appDirectory: "app", buildDirectory: process.env.RETASC_BUILD_DIR || "build" } satisfies Config;
