/**
 * "Greenline could not be reached", said with the URL and the cause a person can act on
 * (refused, no such host, timed out, TLS), instead of fetch's bare "fetch failed".
 */

/** The exit code of a command that needed Greenline and could not reach it (sysexits' EX_UNAVAILABLE). */
export const SERVICE_UNAVAILABLE = 69;

export class ServiceUnreachableError extends Error {}

const CAUSES: Record<string, string> = {
  ECONNREFUSED: "connection refused (is Greenline running there?)",
  ECONNRESET: "connection reset",
  ENOTFOUND: "no such host (DNS)",
  EAI_AGAIN: "DNS lookup failed (temporary)",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "timed out",
  UND_ERR_CONNECT_TIMEOUT: "connection timed out",
  UND_ERR_HEADERS_TIMEOUT: "timed out waiting for an answer",
  UND_ERR_SOCKET: "connection closed",
  EPROTO: "TLS handshake failed (is the URL http, not https?)",
  ERR_SSL_WRONG_VERSION_NUMBER: "TLS handshake failed (is the URL http, not https?)",
  DEPTH_ZERO_SELF_SIGNED_CERT: "TLS: self-signed certificate",
  SELF_SIGNED_CERT_IN_CHAIN: "TLS: self-signed certificate in chain",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "TLS: certificate not trusted",
  CERT_HAS_EXPIRED: "TLS: certificate expired",
  ERR_TLS_CERT_ALTNAME_INVALID: "TLS: certificate does not match the host name",
};

/** The first `code` along an error's chain of causes (fetch wraps undici's, which may wrap the socket's). */
function codeOf(error: unknown): string | undefined {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === "string") return e.code;
  }
  return undefined;
}

/** Why a request to `url` failed before any answer; the URL and the cause, never a stack. */
export function describeUnreachable(url: string, error: unknown): ServiceUnreachableError {
  const name = (error as { name?: string } | undefined)?.name;
  if (name === "TimeoutError" || name === "AbortError") return new ServiceUnreachableError(`cannot reach Greenline at ${url}: timed out`);
  const code = codeOf(error);
  const deepest = (() => {
    let e = error as { message?: string; cause?: unknown } | undefined;
    while (e?.cause && typeof e.cause === "object") e = e.cause as typeof e;
    return e?.message;
  })();
  const cause = code ? (CAUSES[code] ? `${CAUSES[code]} [${code}]` : `${deepest ?? code} [${code}]`) : (deepest ?? String(error));
  return new ServiceUnreachableError(`cannot reach Greenline at ${url}: ${cause}`);
}
