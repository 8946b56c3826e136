import type { ResolvedBinding } from "./binding.ts";
import { PollQuiet } from "./poll-quiet.ts";
import { keyFingerprint, readBindings, updateBindings, type ClaimRecord } from "./store.ts";

/**
 * `retasc mcp proxy`: the local stdio MCP server an agent's `.mcp.json` runs. Every message is
 * relayed as it is to the deployment's /mcp with the folder's key, and the replies back; the
 * proxy reads the replies to the claims made through it, and while the agent lives (its end of
 * stdin open) heartbeats each of them every RETASC_HEARTBEAT_MS. When the agent exits or is
 * killed, stdin closes, the proxy exits, the heartbeats stop, and the lease lapses as it should.
 */
export const DEFAULT_HEARTBEAT_MS = 600_000;

interface Message {
  jsonrpc: "2.0";
  id?: string | number;
  method?: string;
  params?: { name?: string; arguments?: Record<string, unknown> };
  result?: { isError?: boolean; structuredContent?: Record<string, unknown>; protocolVersion?: string };
  error?: { code: number; message: string };
}

interface ClaimSeen {
  identifier: string;
  claimToken: string;
  branch?: string;
  expiresAt?: string;
}

/** Codes of a heartbeat that will never succeed again: the claim is gone, stop renewing it. */
const GONE = new Set(["STALE_CLAIM", "NOT_FOUND", "FORBIDDEN", "UNAUTHORIZED"]);

const errorOf = (reply: Message) =>
  reply.error?.message ?? (reply.result?.isError ? (reply.result.structuredContent?.error as { code?: string } | undefined)?.code : undefined);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, as another user's process.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** Claims a proxy filed that has since exited: a restarted agent's to resume (the server refuses a lapsed one). */
export function orphanedClaims(claims: Record<string, ClaimRecord>): [string, ClaimRecord][] {
  return Object.entries(claims).filter(([, claim]) => claim.proxyPid !== undefined && claim.proxyPid !== process.pid && !alive(claim.proxyPid));
}

export function heartbeatInterval(): number {
  const value = Number(process.env.RETASC_HEARTBEAT_MS ?? DEFAULT_HEARTBEAT_MS);
  return Number.isInteger(value) && value >= 100 ? value : DEFAULT_HEARTBEAT_MS;
}

const claimsIn = (content: Record<string, unknown> | undefined): ClaimSeen[] => {
  if (!content) return [];
  const list = Array.isArray(content.claims) ? content.claims : [content];
  return list.filter((c): c is ClaimSeen => Boolean(c && typeof c === "object" && typeof c.claimToken === "string" && typeof c.identifier === "string"));
};

export async function runProxy(binding: ResolvedBinding, log: (line: string) => void): Promise<void> {
  const [{ StdioServerTransport }, { StreamableHTTPClientTransport }] = await Promise.all([
    import("@modelcontextprotocol/sdk/server/stdio.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
  ]);
  const upstream = new StreamableHTTPClientTransport(new URL(binding.mcpUrl), {
    requestInit: { headers: { authorization: `Bearer ${binding.key}` } },
  });
  const local = new StdioServerTransport();
  /** The agent's tools/call requests awaiting a reply: what was called, to read the reply by. */
  const calls = new Map<string | number, { name: string; args: Record<string, unknown> }>();
  /** Our own heartbeats awaiting a reply, by request id. */
  const beats = new Map<string, string>();
  const leases = new Map<string, string>();
  let sequence = 0;

  const remember = async (seen: ClaimSeen[]) => {
    for (const claim of seen) leases.set(claim.identifier, claim.claimToken);
    // Filed in the keystore too, so `retasc heartbeat`, `checkpoint`, `release` and `done` work on them from a terminal.
    await updateBindings((bindings) => {
      const mine = (bindings.claims[keyFingerprint(binding.key)] ??= {});
      for (const claim of seen) {
        mine[claim.identifier] = {
          claimToken: claim.claimToken,
          branch: claim.branch ?? "",
          worktree: mine[claim.identifier]?.worktree ?? null,
          expiresAt: claim.expiresAt ?? "",
          claimedAt: new Date().toISOString(),
          proxyPid: process.pid,
        };
      }
    }).catch((error: Error) => log(`retasc mcp proxy: could not file the claim in the keystore: ${error.message}`));
  };

  /** Our own take-overs (claim_issue by token) awaiting a reply, by request id. */
  const takeovers = new Map<string, [identifier: string, claimToken: string]>();
  let resumed = false;
  /** Moves the live claims of this key's dead proxies to this session, by their tokens. */
  const resume = () => {
    if (resumed) return;
    resumed = true;
    for (const [identifier, claim] of orphanedClaims(readBindings().claims[keyFingerprint(binding.key)] ?? {})) {
      const id = `retasc-proxy:${++sequence}`;
      takeovers.set(id, [identifier, claim.claimToken]);
      upstream
        .send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "claim_issue", arguments: { identifier, claimToken: claim.claimToken } } })
        .catch((error: Error) => {
          takeovers.delete(id);
          log(`retasc mcp proxy: could not resume ${identifier}: ${error.message}`);
        });
    }
  };

  const quiet = new PollQuiet();
  const observe = (call: { name: string; args: Record<string, unknown> }, reply: Message) => {
    const result = reply.result;
    if (call.name === "next_issue") quiet.heard(call.args, result && !result.isError ? result.structuredContent : undefined);
    if (!result || result.isError) return;
    if (["next_issue", "claim_issue", "next_batch"].includes(call.name)) {
      const seen = claimsIn(result.structuredContent);
      if (seen.length) void remember(seen);
    }
    const identifier = typeof call.args.identifier === "string" ? call.args.identifier.toUpperCase() : null;
    const ends = call.name === "release_issue" || (call.name === "save_issue" && ["done", "canceled", "review"].includes(String(call.args.status)));
    if (identifier && ends && leases.get(identifier) === call.args.claimToken) leases.delete(identifier);
  };

  upstream.onmessage = (message) => {
    const reply = message as Message;
    if (reply.id !== undefined && takeovers.has(String(reply.id)) && reply.method === undefined) {
      const [identifier, token] = takeovers.get(String(reply.id))!;
      takeovers.delete(String(reply.id));
      const seen = reply.result && !reply.result.isError ? claimsIn(reply.result.structuredContent) : [];
      if (seen.length) void remember(seen).then(() => log(`retasc mcp proxy: resumed ${identifier} from a proxy that exited`));
      else {
        log(`retasc mcp proxy: ${identifier} could not be resumed: ${errorOf(reply) ?? "no claim in the reply"}`);
        // Gone (finished, released, lapsed or taken): no later proxy should try it again.
        void updateBindings((bindings) => {
          const mine = bindings.claims[keyFingerprint(binding.key)];
          if (mine?.[identifier]?.claimToken === token) delete mine[identifier];
        }).catch(() => {});
      }
      return;
    }
    if (reply.id !== undefined && beats.has(String(reply.id)) && reply.method === undefined) {
      const identifier = beats.get(String(reply.id))!;
      beats.delete(String(reply.id));
      const failure = errorOf(reply);
      if (failure) {
        log(`retasc mcp proxy: heartbeat of ${identifier} failed: ${failure}`);
        if (GONE.has(failure)) leases.delete(identifier);
      }
      return;
    }
    if (reply.id !== undefined && reply.method === undefined) {
      const call = calls.get(reply.id);
      calls.delete(reply.id);
      if (call) observe(call, reply);
      if (reply.result?.protocolVersion) {
        upstream.setProtocolVersion(reply.result.protocolVersion);
        // The session exists now (its id came with this reply): take over what a dead proxy left.
        resume();
      }
    }
    void local.send(message);
  };
  upstream.onerror = (error) => log(`retasc mcp proxy: ${error.message}`);

  local.onmessage = (message) => {
    const request = message as Message;
    if (request.method === "tools/call" && request.id !== undefined && request.params?.name) {
      const args = request.params.arguments ?? {};
      if (request.params.name !== "next_issue") quiet.clear();
      else {
        // Polled again before the retryAfter of an empty reply: answered here, the server is spared.
        const empty = quiet.answer(args);
        if (empty) return void local.send({ jsonrpc: "2.0", id: request.id, result: { content: [{ type: "text", text: JSON.stringify(empty) }], structuredContent: empty } });
      }
      calls.set(request.id, { name: request.params.name, args });
    }
    upstream.send(message).catch((error: Error) => {
      log(`retasc mcp proxy: ${binding.mcpUrl}: ${error.message}`);
      if (request.id === undefined || request.method === undefined) return;
      calls.delete(request.id);
      void local.send({ jsonrpc: "2.0", id: request.id, error: { code: -32603, message: `retasc mcp proxy could not reach ${binding.mcpUrl}: ${error.message}` } });
    });
  };

  const parent = process.ppid;
  const beat = () => {
    // Reparented: the agent that started us is gone, whatever stdin says.
    if (process.ppid !== parent) return stop();
    for (const [identifier, claimToken] of leases) {
      const id = `retasc-proxy:${++sequence}`;
      beats.set(id, identifier);
      upstream
        .send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "heartbeat", arguments: { identifier, claimToken } } })
        .catch((error: Error) => {
          beats.delete(id);
          log(`retasc mcp proxy: heartbeat of ${identifier} failed: ${error.message}`);
        });
    }
  };
  const timer = setInterval(beat, heartbeatInterval());

  let stopped = false;
  let resolveDone: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  function stop() {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    void upstream.close().catch(() => {});
    resolveDone();
  }
  local.onclose = stop;
  process.stdin.once("end", stop);
  process.stdin.once("close", stop);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(signal, stop);

  await upstream.start();
  await local.start();
  await done;
}
