import { pino, type DestinationStream, type Logger } from "pino";

export type { Logger };

/** Paths that may hold secrets; pino replaces their values before anything is written. */
export const REDACTED_PATHS = ['req.headers["x-api-token"]', "req.headers.authorization", "req.headers.cookie", 'req.headers["x-hub-signature-256"]', "token", "privateKey", "secret"];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACTED_PATHS, censor: "[redacted]" }, base: { service: "greenline" } }, destination);
}
