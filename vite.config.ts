import { reactRouter } from "@react-router/dev/vite";
import tailwindcss from "@tailwindcss/vite";
import { defineConfig } from "vite";
import { serverOnly } from "./scripts/server-only.ts";

export default defineConfig({
  plugins: [serverOnly(import.meta.dirname), tailwindcss(), reactRouter()],
  server: { watch: { ignored: ["**/.retasc/**"] } },
});
