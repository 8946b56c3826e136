import { type RouteConfig, index, route } from "@react-router/dev/routes";

export default [
  index("routes/home.tsx"),
  route("healthz", "routes/healthz.ts"),
  route("mcp", "routes/mcp.ts"),
  route(".well-known/mcp.json", "routes/well-known.mcp-json.ts"),
  route(".well-known/api-catalog", "routes/well-known.api-catalog.ts"),
  route("index.md", "routes/index-md.ts"),
] satisfies RouteConfig;
