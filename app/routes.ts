import { type RouteConfig, index, route } from "@react-router/dev/routes";

export default [
  index("routes/home.tsx"),
  route("healthz", "routes/healthz.ts"),
  route(".well-known/mcp.json", "routes/well-known.mcp-json.ts"),
  route(".well-known/api-catalog", "routes/well-known.api-catalog.ts"),
  // MCP sign-in (OAuth): RFC 9728 resource metadata, RFC 8414 server metadata, the consent page
  route(".well-known/oauth-protected-resource", "routes/well-known.oauth-protected-resource.ts"),
  route(".well-known/oauth-protected-resource/mcp", "routes/well-known.oauth-protected-resource.ts", { id: "oauth-protected-resource-mcp" }),
  route(".well-known/oauth-authorization-server", "routes/well-known.oauth-authorization-server.ts"),
  route(".well-known/oauth-authorization-server/api/auth", "routes/well-known.oauth-authorization-server.ts", {
    id: "oauth-authorization-server-issuer",
  }),
  route("oauth/consent", "routes/oauth.consent.tsx"),
  route("index.md", "routes/index-md.ts"),
  // The CLI's tarball, so any machine that reaches this server can install it
  route("cli/:file", "routes/cli.$file.ts"),
  // The repository's docs/, and the product for agents: llms.txt and how they authenticate
  route("docs/*", "routes/docs.$.ts"),
  route("docs", "routes/docs.$.ts", { id: "docs-index" }),
  route("llms.txt", "routes/agent-pages.ts"),
  route("auth.md", "routes/agent-pages.ts", { id: "auth-md" }),
  // People, orgs, keys (sign-in, device approval, the Dash shell and its settings, CLI endpoints)
  route("api/auth/*", "routes/api.auth.$.ts"),
  route("auth/sign-in", "routes/auth.sign-in.tsx"),
  route("auth/sign-up", "routes/auth.sign-up.tsx"),
  route("auth/sign-out", "routes/auth.sign-out.ts"),
  route("device", "routes/device.tsx"),
  route("join/:code", "routes/join.$code.tsx"),
  route("dash", "routes/dash.tsx", [
    index("routes/dash._index.tsx"),
    // The live Dash: fleet (index), queue, issue drill-down and creation, and its event stream
    route("queue", "routes/dash.queue.tsx"),
    route("issues/new", "routes/dash.issues.new.tsx"),
    route("issues/:identifier", "routes/dash.issues.$identifier.tsx"),
    route("attachments/:id", "routes/dash.attachments.$id.ts"),
    route("events", "routes/dash.events.ts"),
    route("orgs/new", "routes/dash.orgs.new.tsx"),
    route("switch-org", "routes/dash.switch-org.ts"),
    route("settings/projects", "routes/dash.settings.projects.tsx"),
    route("settings/members", "routes/dash.settings.members.tsx"),
    route("settings/keys", "routes/dash.settings.keys.tsx"),
    route("settings/billing", "routes/dash.settings.billing.tsx"),
    route("settings/connectors", "routes/dash.settings.connectors.tsx"),
    route("settings/notifications", "routes/dash.settings.notifications.tsx"),
    route("settings/notifications/slack", "routes/dash.settings.notifications.slack.ts"),
    route("settings/transfer", "routes/dash.settings.transfer.tsx"),
    route("settings/transfer/export", "routes/dash.settings.transfer.export.ts"),
    route("settings/import", "routes/dash.settings.import.tsx"),
    route("settings/delete-org", "routes/dash.settings.delete-org.tsx"),
  ]),
  route("api/cli/whoami", "routes/api.cli.whoami.ts"),
  route("api/cli/orgs", "routes/api.cli.orgs.ts"),
  route("api/cli/orgs/delete", "routes/api.cli.orgs.delete.ts"),
  route("api/cli/projects", "routes/api.cli.projects.ts"),
  route("api/cli/keys", "routes/api.cli.keys.ts"),
  route("api/cli/members", "routes/api.cli.members.ts"),
  route("api/cli/join", "routes/api.cli.join.ts"),
  route("api/cli/setup", "routes/api.cli.setup.ts"),
  route("api/cli/sign-in-methods", "routes/api.cli.sign-in-methods.ts"),
  route("api/cli/billing", "routes/api.cli.billing.ts"),
  route("api/cli/connectors", "routes/api.cli.connectors.ts"),
  route("api/cli/export", "routes/api.cli.export.ts"),
  route("api/cli/import/:source", "routes/api.cli.import.$source.ts"),
  route("api/cli/triage", "routes/api.cli.triage.ts"),
  // CI attestations, with a CI key only (decision 045)
  route("api/ci/verify", "routes/api.ci.verify.ts"),
  // Billing: Stripe's signed webhook
  route("webhooks/stripe", "routes/webhooks.stripe.ts"),
  // Notifications: the chat bots' signed webhooks (binding a person's chat)
  route("webhooks/telegram", "routes/webhooks.telegram.ts"),
  route("webhooks/slack", "routes/webhooks.slack.ts"),
  route("webhooks/discord", "routes/webhooks.discord.ts"),
  // Intake: GitHub and GitLab issue webhooks, one URL per connector
  route("webhooks/github/:connectorId", "routes/webhooks.github.$connectorId.ts"),
  route("webhooks/gitlab/:connectorId", "routes/webhooks.gitlab.$connectorId.ts"),
] satisfies RouteConfig;
