import { z } from "zod";
import { DEFAULT_DATABASE_URL } from "./defaults.js";
import { parseSandboxFaults, type SandboxFaults } from "./domain/sandbox-faults.js";

/** How long PostgreSQL lets a statement run, and a transaction sit idle, before it ends them. */
export type PostgresTimeouts = { statementTimeoutMs: number; idleInTransactionTimeoutMs: number };

export const DEFAULT_POSTGRES_TIMEOUTS: PostgresTimeouts = { statementTimeoutMs: 60_000, idleInTransactionTimeoutMs: 60_000 };

/** Outbound webhooks: delivery, retries, and what endpoints may be (docs/webhooks.md). */
export type WebhookSettings = {
  /** Endpoints may be http:// and resolve to loopback/private addresses (an operator's choice; tests). */
  allowPrivate: boolean;
  /** A delivery attempt not answered within this is a failure. */
  timeoutMs: number;
  /** Retries wait base·2^(n-1), capped at max, with jitter. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** An endpoint failing (no success) for this long is disabled, with the reason. */
  disableAfterMs: number;
  /** How often an idle dispatcher looks for messages due. */
  pollMs: number;
  /** Encrypts signing secrets at rest (GREENLINE_SECRET_KEY); null: stored as given. */
  secretKey: string | null;
};

export const DEFAULT_WEBHOOK_SETTINGS: WebhookSettings = {
  allowPrivate: false,
  timeoutMs: 10_000,
  retryBaseMs: 5_000,
  retryMaxMs: 60 * 60_000,
  disableAfterMs: 24 * 3600_000,
  pollMs: 100,
  secretKey: null,
};

/** How long history is kept, in days (0: forever); see src/queue/retention.ts. */
export type RetentionSettings = {
  /** PRs that left their queue (with their timelines), archived runs, operator events (GREENLINE_HISTORY_RETENTION_DAYS). */
  historyDays: number;
  /** Effects carried out or given up (GREENLINE_EFFECT_RETENTION_DAYS). */
  effectDays: number;
  /** The organizations' audit logs (GREENLINE_AUDIT_RETENTION_DAYS; docs/audit.md). */
  auditDays: number;
};

export const DEFAULT_RETENTION: RetentionSettings = { historyDays: 90, effectDays: 7, auditDays: 365 };

const ZOptionalString = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === "" ? undefined : value));

const ZEnvironment = z
  .object({
    PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    HOST: z.string().min(1).default("0.0.0.0"),
    DATABASE_URL: ZOptionalString.pipe(
      z
        .string()
        .regex(/^(file:|postgres(ql)?:\/\/)/, "must start with file: or postgresql://")
        .optional(),
    ),
    LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    APP_ID: ZOptionalString.pipe(z.string().regex(/^\d+$/, "must be a number").optional()),
    PRIVATE_KEY: ZOptionalString,
    PRIVATE_KEY_PATH: ZOptionalString,
    WEBHOOK_SECRET: ZOptionalString,
    GITHUB_API_URL: ZOptionalString.pipe(z.url().optional()),
    // The App's OAuth client ("Sign in with GitHub" on the dashboard); `greenline setup github` writes both.
    GITHUB_CLIENT_ID: ZOptionalString,
    GITHUB_CLIENT_SECRET: ZOptionalString,
    // GitHub's web address, where users authorize the App; unset: derived from GITHUB_API_URL.
    GITHUB_URL: ZOptionalString.pipe(
      z
        .url()
        .regex(/^https?:\/\/[^?#]*$/, "must be an http(s) URL without a query or fragment")
        .optional(),
    ),
    GREENLINE_API_TOKEN: ZOptionalString.pipe(z.string().min(16, "must be at least 16 characters").optional()),
    GREENLINE_SANDBOX_CI_MS: z.coerce.number().int().min(0).max(86_400_000).default(5000),
    GREENLINE_SANDBOX_FAILURE_RATE: z.coerce.number().min(0).max(1).default(0),
    GREENLINE_SANDBOX_FLAKE_RATE: z.coerce.number().min(0).max(1).default(0),
    // A testing aid: the sandbox code host slow or failing for some owners (src/adapters/sandbox/code-host.ts).
    GREENLINE_SANDBOX_FAULTS: ZOptionalString.transform((text, ctx) => {
      try {
        return parseSandboxFaults(text ?? "");
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
        return z.NEVER;
      }
    }),
    GREENLINE_WORKER_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(250),
    // Reconciliation of CI results on GitHub: runs in flight are polled first after this, then at doubling intervals up to the max.
    GREENLINE_CI_POLL_FIRST_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(30_000),
    GREENLINE_CI_POLL_MAX_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(300_000),
    // Above the longest legitimate statement (a 20 MB upload's bulk insert) and above Prisma's
    // 30 s interactive transaction timeout, which rolls back first (docs/decisions.md).
    GREENLINE_PG_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(DEFAULT_POSTGRES_TIMEOUTS.statementTimeoutMs),
    GREENLINE_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(DEFAULT_POSTGRES_TIMEOUTS.idleInTransactionTimeoutMs),
    GREENLINE_GITHUB_RESERVE_PERCENT: z.coerce.number().min(0).max(90).default(20),
    GREENLINE_SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
    // Admission control (docs/decisions.md): requests served at once, more answer 503 with Retry-After;
    // how long a transaction waits for the database (SQLite's writer, a pooled PostgreSQL connection) before answering 503.
    GREENLINE_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).default(64),
    GREENLINE_DB_WAIT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
    GREENLINE_HISTORY_RETENTION_DAYS: z.coerce.number().int().min(0).max(36_500).default(DEFAULT_RETENTION.historyDays),
    GREENLINE_EFFECT_RETENTION_DAYS: z.coerce.number().int().min(0).max(36_500).default(DEFAULT_RETENTION.effectDays),
    GREENLINE_AUDIT_RETENTION_DAYS: z.coerce.number().int().min(0).max(36_500).default(DEFAULT_RETENTION.auditDays),
    // Trunk's analytics CLI uploads its bundle to a URL Greenline signs: the address clients reach it at, the key, and how long a URL lasts.
    GREENLINE_PUBLIC_URL: ZOptionalString.pipe(
      z
        .url()
        .regex(/^https?:\/\/[^?#]*$/, "must be an http(s) URL without a query or fragment")
        .optional(),
    ),
    GREENLINE_BUNDLE_URL_SECRET: ZOptionalString.pipe(z.string().min(32, "must be at least 32 characters").optional()),
    // Signs the dashboard's session cookies; unset, a key generated once and kept in the data directory (src/session-secret.ts).
    GREENLINE_SESSION_SECRET: ZOptionalString.pipe(z.string().min(32, "must be at least 32 characters").optional()),
    GREENLINE_BUNDLE_URL_TTL_SECONDS: z.coerce.number().int().min(10).max(86_400).default(900),
    // Outbound webhooks (docs/webhooks.md).
    GREENLINE_WEBHOOK_ALLOW_PRIVATE: z.enum(["true", "false", ""]).default("false"),
    GREENLINE_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(DEFAULT_WEBHOOK_SETTINGS.timeoutMs),
    GREENLINE_WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(1).max(3_600_000).default(DEFAULT_WEBHOOK_SETTINGS.retryBaseMs),
    GREENLINE_WEBHOOK_RETRY_MAX_MS: z.coerce.number().int().min(1).max(86_400_000).default(DEFAULT_WEBHOOK_SETTINGS.retryMaxMs),
    GREENLINE_WEBHOOK_DISABLE_AFTER_MS: z.coerce
      .number()
      .int()
      .min(1)
      .max(30 * 86_400_000)
      .default(DEFAULT_WEBHOOK_SETTINGS.disableAfterMs),
    GREENLINE_WEBHOOK_POLL_MS: z.coerce.number().int().min(5).max(60_000).default(DEFAULT_WEBHOOK_SETTINGS.pollMs),
    GREENLINE_SECRET_KEY: ZOptionalString.pipe(z.string().min(32, "must be at least 32 characters").optional()),
    // Where Greenline keeps its files (the generated session key); unset: the SQLite database's directory, or ./data.
    GREENLINE_DATA_DIR: ZOptionalString,
    GREENLINE_ORG: ZOptionalString.pipe(
      z
        .string()
        .regex(/^[a-z0-9][a-z0-9-]{0,62}$/i, "must be letters, digits and dashes")
        .optional(),
    ),
    // The organization that runs the service: its tokens also see the service's own metrics (unset: nobody's do).
    GREENLINE_OPERATOR_ORG: ZOptionalString.pipe(
      z
        .string()
        .regex(/^[a-z0-9][a-z0-9-]{0,62}$/i, "must be letters, digits and dashes")
        .optional(),
    ),
  })
  .superRefine((env, ctx) => {
    if (env.GREENLINE_API_TOKEN && !env.GREENLINE_ORG) {
      ctx.addIssue({ code: "custom", path: ["GREENLINE_ORG"], message: "is required when GREENLINE_API_TOKEN is set" });
    }
    if (Boolean(env.GITHUB_CLIENT_ID) !== Boolean(env.GITHUB_CLIENT_SECRET)) {
      const missing = env.GITHUB_CLIENT_ID ? "GITHUB_CLIENT_SECRET" : "GITHUB_CLIENT_ID";
      ctx.addIssue({ code: "custom", path: [missing], message: "is required when the other of GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET is set (the App's OAuth client)" });
    }
    if (env.GITHUB_CLIENT_ID && !env.APP_ID) {
      ctx.addIssue({ code: "custom", path: ["APP_ID"], message: "is required when GITHUB_CLIENT_ID is set (Sign in with GitHub goes through the GitHub App)" });
    }
    const app = [env.APP_ID, env.PRIVATE_KEY ?? env.PRIVATE_KEY_PATH, env.WEBHOOK_SECRET];
    if (app.some(Boolean) && !app.every(Boolean)) {
      for (const [name, value] of [
        ["APP_ID", env.APP_ID],
        ["PRIVATE_KEY", env.PRIVATE_KEY ?? env.PRIVATE_KEY_PATH],
        ["WEBHOOK_SECRET", env.WEBHOOK_SECRET],
      ] as const) {
        if (!value) ctx.addIssue({ code: "custom", path: [name], message: "is required when a GitHub App is configured (APP_ID, PRIVATE_KEY, WEBHOOK_SECRET go together)" });
      }
    }
  });

/** Every variable the configuration reads (compose.yaml passes each to the container: test/deploy/compose.test.ts). */
export const CONFIG_VARIABLES = Object.keys(ZEnvironment.shape) as readonly (keyof typeof ZEnvironment.shape)[];

export type GitHubAppConfig = {
  appId: string;
  privateKey: string;
  webhookSecret: string;
  apiUrl: string | undefined;
  /**
   * Octokit's throttling (at least a second between writes, as GitHub asks of integrations).
   * On by default; tests against the GitHub simulator turn it off.
   */
  throttle?: boolean;
  /**
   * The share of each installation's rate limit (percent) kept for first attempts: below it,
   * retries wait for the reset (GREENLINE_GITHUB_RESERVE_PERCENT, default 20).
   */
  reservePercent?: number;
  /** The App's OAuth client, for "Sign in with GitHub" (GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET); null: sign-in with API tokens only. */
  oauth?: { clientId: string; clientSecret: string; webUrl: string } | null;
};

export type Config = {
  port: number;
  host: string;
  databaseUrl: string;
  logLevel: z.infer<typeof ZEnvironment>["LOG_LEVEL"];
  /** null = run with the sandbox code host. */
  githubApp: GitHubAppConfig | null;
  bootstrap: { token: string; org: string } | null;
  /** The organization whose tokens also see the service's own metrics (lower-case); absent or null: none. */
  operatorOrg?: string | null;
  /** The sandbox code host's simulated CI (used when githubApp is null). */
  sandbox: { ciMs: number; failureRate: number; flakeRate: number; faults?: SandboxFaults };
  workerIntervalMs: number;
  /** Reconciliation polling of runs in flight (default: 30 s, doubling to 5 min). */
  ciPoll?: { firstMs: number; maxMs: number };
  /** Limits every PostgreSQL connection starts with (unused on SQLite). */
  postgresTimeouts: PostgresTimeouts;
  /** On SIGTERM/SIGINT: how long in-flight work may take before the process exits anyway. */
  shutdownTimeoutMs: number;
  /** Requests served at once (GREENLINE_MAX_IN_FLIGHT, default 64); more answer 503 with Retry-After. */
  maxInFlight?: number;
  /** How long a transaction waits for the database before its request answers 503 (GREENLINE_DB_WAIT_MS, default 5 s). */
  databaseWaitMs?: number;
  /** The address clients reach the service at (GREENLINE_PUBLIC_URL); unset: each request's Host. */
  publicUrl?: string | undefined;
  /**
   * The bundle upload URLs handed to Trunk's analytics CLI: the HMAC key they are signed with
   * (unset: a random key per process, so a restart voids URLs not yet used) and their lifetime.
   */
  bundleUrls?: { secret: string | undefined; ttlMs: number };
  /**
   * The key the dashboard's session cookies are signed with (GREENLINE_SESSION_SECRET); unset: a
   * key generated once and kept in the data directory's `session-secret` file.
   */
  sessionSecret?: string | undefined;
  /** GREENLINE_DATA_DIR; unset: the SQLite database's directory, or ./data on PostgreSQL (src/session-secret.ts). */
  dataDir?: string | undefined;
  /** Outbound webhooks (default: DEFAULT_WEBHOOK_SETTINGS). */
  webhooks?: WebhookSettings;
  /** How long history is kept (default: DEFAULT_RETENTION). */
  retention?: RetentionSettings;
};

export { DEFAULT_DATABASE_URL };

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

/** Reads and validates the environment; throws ConfigError naming each bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv, readFile: (path: string) => string): Config {
  const parsed = ZEnvironment.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join(".") || "environment"} ${issue.message}`));
  }
  const e = parsed.data;
  let githubApp: GitHubAppConfig | null = null;
  if (e.APP_ID && e.WEBHOOK_SECRET) {
    let privateKey = e.PRIVATE_KEY;
    if (!privateKey && e.PRIVATE_KEY_PATH) {
      try {
        privateKey = readFile(e.PRIVATE_KEY_PATH);
      } catch (error) {
        throw new ConfigError([`PRIVATE_KEY_PATH cannot be read: ${(error as Error).message}`]);
      }
    }
    const oauth = e.GITHUB_CLIENT_ID && e.GITHUB_CLIENT_SECRET ? { clientId: e.GITHUB_CLIENT_ID, clientSecret: e.GITHUB_CLIENT_SECRET, webUrl: e.GITHUB_URL?.replace(/\/+$/, "") ?? githubWebUrl(e.GITHUB_API_URL) } : null;
    githubApp = { appId: e.APP_ID, privateKey: privateKey!.replace(/\\n/g, "\n"), webhookSecret: e.WEBHOOK_SECRET, apiUrl: e.GITHUB_API_URL, reservePercent: e.GREENLINE_GITHUB_RESERVE_PERCENT, oauth };
  }
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL ?? DEFAULT_DATABASE_URL,
    logLevel: e.LOG_LEVEL,
    githubApp,
    bootstrap: e.GREENLINE_API_TOKEN && e.GREENLINE_ORG ? { token: e.GREENLINE_API_TOKEN, org: e.GREENLINE_ORG.toLowerCase() } : null,
    operatorOrg: e.GREENLINE_OPERATOR_ORG?.toLowerCase() ?? null,
    sandbox: {
      ciMs: e.GREENLINE_SANDBOX_CI_MS,
      failureRate: e.GREENLINE_SANDBOX_FAILURE_RATE,
      flakeRate: e.GREENLINE_SANDBOX_FLAKE_RATE,
      ...(e.GREENLINE_SANDBOX_FAULTS.size > 0 ? { faults: e.GREENLINE_SANDBOX_FAULTS } : {}),
    },
    workerIntervalMs: e.GREENLINE_WORKER_INTERVAL_MS,
    ciPoll: { firstMs: e.GREENLINE_CI_POLL_FIRST_MS, maxMs: Math.max(e.GREENLINE_CI_POLL_FIRST_MS, e.GREENLINE_CI_POLL_MAX_MS) },
    postgresTimeouts: { statementTimeoutMs: e.GREENLINE_PG_STATEMENT_TIMEOUT_MS, idleInTransactionTimeoutMs: e.GREENLINE_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS },
    shutdownTimeoutMs: e.GREENLINE_SHUTDOWN_TIMEOUT_MS,
    maxInFlight: e.GREENLINE_MAX_IN_FLIGHT,
    databaseWaitMs: e.GREENLINE_DB_WAIT_MS,
    retention: { historyDays: e.GREENLINE_HISTORY_RETENTION_DAYS, effectDays: e.GREENLINE_EFFECT_RETENTION_DAYS, auditDays: e.GREENLINE_AUDIT_RETENTION_DAYS },
    publicUrl: e.GREENLINE_PUBLIC_URL?.replace(/\/+$/, ""),
    bundleUrls: { secret: e.GREENLINE_BUNDLE_URL_SECRET, ttlMs: e.GREENLINE_BUNDLE_URL_TTL_SECONDS * 1000 },
    sessionSecret: e.GREENLINE_SESSION_SECRET,
    dataDir: e.GREENLINE_DATA_DIR,
    webhooks: {
      allowPrivate: e.GREENLINE_WEBHOOK_ALLOW_PRIVATE === "true",
      timeoutMs: e.GREENLINE_WEBHOOK_TIMEOUT_MS,
      retryBaseMs: e.GREENLINE_WEBHOOK_RETRY_BASE_MS,
      retryMaxMs: Math.max(e.GREENLINE_WEBHOOK_RETRY_BASE_MS, e.GREENLINE_WEBHOOK_RETRY_MAX_MS),
      disableAfterMs: e.GREENLINE_WEBHOOK_DISABLE_AFTER_MS,
      pollMs: e.GREENLINE_WEBHOOK_POLL_MS,
      secretKey: e.GREENLINE_SECRET_KEY ?? null,
    },
  };
}

/**
 * GitHub's web address from its API's: api.github.com → github.com; a GitHub Enterprise Server's
 * `<server>/api/v3` → `<server>`; anything else (a proxy, the tests' simulator) → its origin.
 */
export function githubWebUrl(apiUrl: string | undefined): string {
  if (!apiUrl) return "https://github.com";
  const url = new URL(apiUrl);
  if (url.hostname === "api.github.com") return "https://github.com";
  const path = url.pathname.replace(/\/+$/, "");
  return path.endsWith("/api/v3") ? `${url.origin}${path.slice(0, -"/api/v3".length)}` : url.origin;
}
