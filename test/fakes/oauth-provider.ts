import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local GitHub or Google OAuth provider for sign-in (GITHUB_OAUTH_URL, GITHUB_API_URL,
 * GOOGLE_OAUTH_URL, GOOGLE_TOKEN_URL, GOOGLE_USERINFO_URL), standing in for github.com /
 * api.github.com and accounts.google.com / googleapis.com. It checks what a real provider checks:
 * client id and secret, the redirect_uri the code was issued for, and the PKCE verifier.
 */
export interface Identity {
  id: string;
  email: string;
  name: string;
}

interface IssuedCode {
  identity: Identity;
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
}

/** One fake provider: an authorize page that consents as `nextIdentity`, a token endpoint, a profile API. */
export class FakeProvider {
  nextIdentity: Identity | null = null;
  /** Why the token endpoint turned a request down, for assertions. */
  readonly refusals: string[] = [];
  readonly seenRedirectUris: string[] = [];
  private readonly codes = new Map<string, IssuedCode>();
  private readonly tokens = new Map<string, Identity>();
  private server!: http.Server;
  url = "";

  constructor(
    readonly kind: "github" | "google",
    readonly clientId: string,
    readonly clientSecret: string,
  ) {}

  get paths() {
    return this.kind === "github"
      ? { authorize: "/login/oauth/authorize", token: "/login/oauth/access_token", profile: "/api/user" }
      : { authorize: "/o/oauth2/v2/auth", token: "/token", profile: "/v1/userinfo" };
  }

  async start() {
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch((error) => {
        res.writeHead(500).end(String(error));
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop() {
    return new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const url = new URL(req.url!, this.url);
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));

    if (req.method === "GET" && url.pathname === this.paths.authorize) {
      const q = url.searchParams;
      const redirectUri = q.get("redirect_uri")!;
      this.seenRedirectUris.push(redirectUri);
      if (q.get("client_id") !== this.clientId || q.get("response_type") !== "code") return json(400, { error: "invalid_request" });
      if (q.get("code_challenge_method") !== "S256" || !q.get("code_challenge")) return json(400, { error: "pkce_required" });
      if (!this.nextIdentity) return json(400, { error: "no identity set up for this sign-in" });
      const code = crypto.randomBytes(12).toString("hex");
      this.codes.set(code, {
        identity: this.nextIdentity,
        clientId: this.clientId,
        redirectUri,
        codeChallenge: q.get("code_challenge")!,
      });
      const back = new URL(redirectUri);
      back.searchParams.set("code", code);
      back.searchParams.set("state", q.get("state")!);
      res.writeHead(302, { location: back.href }).end();
      return;
    }

    if (req.method === "POST" && url.pathname === this.paths.token) {
      let raw = "";
      for await (const chunk of req) raw += chunk;
      const form = new URLSearchParams(raw);
      const refuse = (reason: string) => {
        this.refusals.push(reason);
        // GitHub answers a bad exchange with 200 and an error body; Google with 400.
        return json(this.kind === "github" ? 200 : 400, { error: reason });
      };
      const issued = this.codes.get(form.get("code") ?? "");
      if (!issued) return refuse("bad_verification_code");
      this.codes.delete(form.get("code")!); // single use
      if (form.get("client_id") !== issued.clientId || form.get("client_secret") !== this.clientSecret) return refuse("incorrect_client_credentials");
      if (form.get("redirect_uri") !== issued.redirectUri) return refuse("redirect_uri_mismatch");
      const challenge = crypto.createHash("sha256").update(form.get("code_verifier") ?? "").digest("base64url");
      if (challenge !== issued.codeChallenge) return refuse("invalid_code_verifier");
      const accessToken = `fake_${crypto.randomBytes(12).toString("hex")}`;
      this.tokens.set(accessToken, issued.identity);
      return json(200, { access_token: accessToken, token_type: "bearer", scope: "", expires_in: 3600 });
    }

    const bearer = req.headers.authorization?.replace(/^Bearer /i, "") ?? "";
    const identity = this.tokens.get(bearer);
    if (req.method === "GET" && url.pathname === this.paths.profile) {
      if (!identity) return json(401, { message: "Bad credentials" });
      if (this.kind === "google") {
        return json(200, { sub: identity.id, email: identity.email, email_verified: true, name: identity.name });
      }
      // GitHub: a private email is absent from the profile; /user/emails has it.
      return json(200, { id: Number(identity.id), login: identity.name.toLowerCase(), name: identity.name, email: null });
    }
    if (this.kind === "github" && req.method === "GET" && url.pathname === "/api/user/emails") {
      if (!identity) return json(401, { message: "Bad credentials" });
      return json(200, [{ email: identity.email, primary: true, verified: true }]);
    }
    json(404, { error: "not found" });
  }
}
