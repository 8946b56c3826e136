import type { ConnectorProvider } from "../../db/schema/index.ts";
import type { Config } from "../config/index.ts";
import { publicOrigin } from "../http/origin.ts";

/** Where the provider delivers a connector's events: on PUBLIC_URL (a provider cannot reach localhost, but a test can). */
export function webhookUrlOf(config: Pick<Config, "PUBLIC_URL" | "PORT">, provider: ConnectorProvider, connectorId: string): string {
  const base = publicOrigin(config).publicUrl ?? `http://localhost:${config.PORT}`;
  return `${base}/webhooks/${provider}/${connectorId}`;
}

/** The GitLab API's origin for a connector: its self-hosted base URL, else GITLAB_URL. */
export function gitlabHostOf(config: Pick<Config, "GITLAB_URL">, baseUrl: string | null): string {
  return (baseUrl ?? config.GITLAB_URL).replace(/\/+$/, "");
}
