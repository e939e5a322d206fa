import { createHmac, timingSafeEqual, type Hmac } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { closeAfterAnswer } from "../net.js";
import type { Logger } from "../log.js";

export const WEBHOOK_PATH = "/api/github/webhooks";
/** GitHub sends no webhook payload over 25 MB. */
export const MAX_WEBHOOK_BYTES = 25 * 1024 * 1024;
/** A delivery still being handled after this long is answered 202 (GitHub gives up after 10 s), as @octokit/webhooks does. */
const ANSWER_WITHIN_MS = 9000;
const REQUIRED_HEADERS = ["x-github-event", "x-hub-signature-256", "x-github-delivery"] as const;
const SIGNATURE_MISMATCH = "Error: [@octokit/webhooks] signature does not match event payload and secret";

export type Delivery = { id: string; name: string; payload: unknown };

export type WebhookRouteOptions = {
  secret: string;
  /** Takes a verified delivery (Greenline records it in its inbox; the worker runs the handlers later). */
  receive: (delivery: Delivery) => Promise<void>;
  log: Logger;
  limit?: number;
};

type Answer = { status: number; error: string };

/**
 * The webhook route, in place of @octokit/webhooks' middleware, which reads a body of any size
 * into memory before it checks the signature. Here a body declared over the limit is refused
 * before any of it is read, a body is cut off the moment it passes the limit, and the
 * signature (HMAC-SHA256 of the body) is computed as the body arrives. Only a verified delivery
 * reaches the app. Otherwise it answers as that middleware does (statuses and messages).
 * Answers false for other paths, for the next handler.
 */
export function webhookRoute({ secret, receive, log, limit = MAX_WEBHOOK_BYTES }: WebhookRouteOptions) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    if (pathOf(req.url) !== WEBHOOK_PATH) return false;
    const refusal = refusalBeforeBody(req, limit);
    if (refusal) return refuseUnread(req, res, refusal);
    const hmac = createHmac("sha256", secret);
    const body = await readBody(req, limit, hmac);
    if (body === "aborted") return true;
    if (body === "too_large") return refuseUnread(req, res, tooLarge(limit));
    const id = header(req, "x-github-delivery");
    const name = header(req, "x-github-event");
    if (!signatureMatches(header(req, "x-hub-signature-256"), hmac)) {
      log.warn({ delivery: id, event: name }, "webhook refused: its signature does not match the webhook secret");
      return answerJson(res, { status: 400, error: SIGNATURE_MISMATCH });
    }
    let payload: unknown;
    try {
      payload = JSON.parse(body.toString("utf8"));
    } catch {
      return answerJson(res, { status: 400, error: "SyntaxError: Invalid JSON" });
    }
    await handOver(res, receive({ id, name, payload }));
    return true;
  };
}

function pathOf(url = "/"): string | null {
  try {
    return new URL(url, "http://localhost").pathname.replace(/\/+$/, "");
  } catch {
    return null;
  }
}

const header = (req: IncomingMessage, name: string) => String(req.headers[name]);

function tooLarge(limit: number, declared?: number): Answer {
  return { status: 413, error: `webhook body${declared ? ` of ${declared} bytes` : ""} exceeds the limit of ${limit / (1024 * 1024)} MiB (${limit} bytes)` };
}

/** What is wrong with a delivery before its body is read, if anything. */
function refusalBeforeBody(req: IncomingMessage, limit: number): Answer | null {
  if (req.method !== "POST") return { status: 404, error: `Unknown route: ${req.method} ${WEBHOOK_PATH}` };
  if (!/^\s*application\/json\s*(?:;|$)/u.test(req.headers["content-type"] ?? "")) {
    return { status: 415, error: 'Unsupported "Content-Type" header value. Must be "application/json"' };
  }
  const missing = REQUIRED_HEADERS.filter((name) => req.headers[name] === undefined);
  if (missing.length > 0) return { status: 400, error: `Required headers missing: ${missing.join(", ")}` };
  const declared = Number(req.headers["content-length"] ?? 0);
  return declared > limit ? tooLarge(limit, declared) : null;
}

function refuseUnread(req: IncomingMessage, res: ServerResponse, refusal: Answer): true {
  closeAfterAnswer(req, res);
  return answerJson(res, refusal);
}

/** The body, each chunk fed to `hmac` as it arrives; "too_large" as soon as it passes `limit` (the rest is left unread). */
function readBody(req: IncomingMessage, limit: number, hmac: Hmac): Promise<Buffer | "too_large" | "aborted"> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (outcome: Buffer | "too_large" | "aborted") => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("close", onClose);
      chunks.length = 0;
      resolve(outcome);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        return finish("too_large");
      }
      hmac.update(chunk);
      chunks.push(chunk);
    };
    const onEnd = () => finish(Buffer.concat(chunks, size));
    // The client went away before the body ended: there is no one to answer.
    const onClose = () => finish("aborted");
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("close", onClose);
    req.on("error", () => {});
  });
}

function signatureMatches(signature: string, hmac: Hmac): boolean {
  const expected = Buffer.from(`sha256=${hmac.digest("hex")}`);
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Answers once the delivery is taken (recorded), or 202 if that takes longer than GitHub waits. */
async function handOver(res: ServerResponse, handled: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), ANSWER_WITHIN_MS);
  });
  // Probot logs each handler's error; the answer carries the first one, as @octokit/webhooks does.
  const outcome = await Promise.race([
    handled.then(
      () => "ok" as const,
      (error: unknown) => error,
    ),
    late,
  ]);
  clearTimeout(timer);
  if (outcome === "late") return answerText(res, 202, "still processing\n");
  if (outcome === "ok") return answerText(res, 200, "ok\n");
  const first = ((outcome as { errors?: unknown[] }).errors?.[0] ?? outcome) as { name?: string; message?: string; status?: number };
  answerJson(res, { status: first.status ?? 500, error: first.message ? `${first.name}: ${first.message}` : "Error: An Unspecified error occurred" });
}

function answerJson(res: ServerResponse, { status, error }: Answer): true {
  const body = JSON.stringify({ error });
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
  return true;
}

function answerText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain", "content-length": Buffer.byteLength(text) }).end(text);
}
