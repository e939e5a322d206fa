import type { CodeHost } from "../ports/code-host.js";
import type { Logger } from "../log.js";
import type { Database } from "../store/database.js";
import type { ReadCache } from "./read-cache.js";
import type { ServiceMetrics } from "./service-metrics.js";
import type { RetentionSettings, WebhookSettings } from "../config.js";

/** What the application services need from the outside world; main.ts builds it. */
export type Services = {
  db: Database;
  codeHost: CodeHost;
  now: () => Date;
  newId: () => string;
  /** A number in [0, 1) (backoff jitter); tests inject their own. */
  random?: () => number;
  readCache: ReadCache;
  log?: Logger;
  /** Outbound webhooks' settings (default: DEFAULT_WEBHOOK_SETTINGS). */
  webhooks?: WebhookSettings;
  /** GREENLINE_PUBLIC_URL (no trailing slash): the PR's status and comment link to its dashboard page; unset, they do not. */
  publicUrl?: string | undefined;
  /** How long history is kept (default: DEFAULT_RETENTION). */
  retention?: RetentionSettings;
  /** This process's service metrics (absent: none are kept). */
  metrics?: ServiceMetrics;
  /**
   * The organization that runs the service (GREENLINE_OPERATOR_ORG, lower-case): its tokens (a
   * scraper's read token too) also see the service's own metrics (every organization's backlog,
   * the pool, rate limits) on /metrics. Absent: nobody sees them.
   */
  operatorOrganization?: string;
};
