import { pino, type DestinationStream, type Logger } from "pino";

export type { Logger };

/** Paths that may hold secrets; pino replaces their values before anything is written. */
export const REDACTED_PATHS = ['req.headers["x-api-token"]', "req.headers.authorization", "req.headers.cookie", 'req.headers["x-hub-signature-256"]', "token", "privateKey", "secret"];

/** The request's URL as logged (pino-http's `req.url`): kept, with its secret query parameters hidden. */
const URL_PATHS = ["req.url"];

/** Query parameters that authorize on their own: a bundle upload URL's grant and signature (src/flaky/bundle-uploads.ts). */
const SECRET_PARAMETERS = /([?&](?:grant|signature)=)[^&#\s]*/gi;

/** `text` with the values of secret query parameters replaced, wherever a URL appears in it. */
export function redactUrl(text: string): string {
  return text.replace(SECRET_PARAMETERS, "$1[redacted]");
}

/**
 * The logger. Secrets are removed before anything is written: the paths above, and the grant
 * and signature of any URL logged, in the request's fields and in the message (Probot's request
 * log writes "PUT /v1/bundles/<id>?grant=…&signature=… 200").
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: {
        paths: [...REDACTED_PATHS, ...URL_PATHS],
        censor: (value: unknown, path: string[]) => (path.join(".") === "req.url" ? (typeof value === "string" ? redactUrl(value) : value) : "[redacted]"),
      },
      hooks: {
        logMethod(args, method) {
          method.apply(this, args.map((a) => (typeof a === "string" ? redactUrl(a) : a)) as Parameters<typeof method>);
        },
      },
      base: { service: "greenline" },
    },
    destination,
  );
}
