import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from "node:crypto";
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP } from "node:net";

/**
 * What keeps outbound webhooks safe: Standard Webhooks signatures, signing secrets encrypted at
 * rest, and the refusal of addresses an outside caller must not reach through us (SSRF).
 */

const SECRET_PREFIX = "whsec_";

/** A new signing secret in the Standard Webhooks format: whsec_ and 32 random bytes, base64. */
export function generateSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

/** The key bytes of a whsec_ secret; null when it is not one (base64 of 24 to 64 bytes). */
export function secretKeyBytes(secret: string): Buffer | null {
  if (!secret.startsWith(SECRET_PREFIX)) return null;
  const b64 = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return null;
  const bytes = Buffer.from(b64, "base64");
  return bytes.length >= 24 && bytes.length <= 64 ? bytes : null;
}

/**
 * The Standard Webhooks signature header: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
 * one per secret (during a rotation both the new and the previous secret sign), space-separated.
 */
export function signatureHeader(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  return secrets
    .map((secret) => {
      const key = secretKeyBytes(secret);
      if (!key) throw new Error("a stored signing secret is not a whsec_ secret");
      return `v1,${createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`;
    })
    .join(" ");
}

const ENCRYPTED_PREFIX = "enc:v1:";

/** Encrypts a secret for storage with AES-256-GCM under GREENLINE_SECRET_KEY; kept as is without a key. */
export function sealSecret(secret: string, serverKey: string | null): string {
  if (!serverKey) return secret;
  const key = createHash("sha256").update(serverKey, "utf8").digest();
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const sealed = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
  return ENCRYPTED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64");
}

/** The secret a stored value holds; throws when it is encrypted and the key is missing or wrong. */
export function openSecret(stored: string, serverKey: string | null): string {
  if (!stored.startsWith(ENCRYPTED_PREFIX)) return stored;
  if (!serverKey) throw new Error("signing secrets are encrypted and GREENLINE_SECRET_KEY is not set");
  const raw = Buffer.from(stored.slice(ENCRYPTED_PREFIX.length), "base64");
  const key = createHash("sha256").update(serverKey, "utf8").digest();
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
}

/**
 * Addresses no webhook goes to unless the operator allows it: this host, private networks,
 * link-local (cloud metadata, 169.254.169.254 and fd00:ec2::254), carrier-grade NAT, benchmark,
 * documentation, multicast and reserved ranges, IPv6 site-local, and IPv4 mapped, compatible or
 * translated into IPv6 (RFC 6890's special-purpose registries).
 */
const REFUSED = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  REFUSED.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of [
  // The unspecified and loopback addresses, and IPv4-compatible ones (deprecated, RFC 4291 2.5.5.1: [::127.0.0.1] is ::7f00:1).
  ["::", 96],
  ["::ffff:0:0", 96],
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001::", 23],
  ["2001:db8::", 32],
  ["2002::", 16],
  ["fc00::", 7],
  ["fe80::", 10],
  // Site-local (deprecated by RFC 3879, still routed privately by some networks).
  ["fec0::", 10],
  ["ff00::", 8],
] as const)
  REFUSED.addSubnet(net, prefix, "ipv6");

/** Whether an IP address is one webhooks are refused (loopback, private, link-local, …). */
export function isRefusedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return REFUSED.check(address, family === 4 ? "ipv4" : "ipv6");
}

/** An endpoint's address refused: it is not tried, and the attempt fails with this. */
export class RefusedAddressError extends Error {
  constructor(host: string, address: string) {
    super(`${host} resolves to ${address}, a loopback, private or reserved address: refused (an operator can allow it with GREENLINE_WEBHOOK_ALLOW_PRIVATE=true)`);
    this.name = "RefusedAddressError";
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request that resolves the host and lets the connection go only to
 * addresses checked here: the socket connects to the address this answered, so a second DNS
 * answer (rebinding) cannot send it elsewhere.
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: { family?: number | string; all?: boolean }, callback: LookupCallback): void => {
    const family = options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : typeof options.family === "number" ? options.family : 0;
    dnsLookup(hostname, { all: true, family }, (error, addresses) => {
      if (error) return callback(error, "");
      const allowed = allowPrivate ? addresses : addresses.filter((a) => !isRefusedAddress(a.address));
      if (allowed.length === 0) return callback(new RefusedAddressError(hostname, addresses[0]?.address ?? "nothing") as NodeJS.ErrnoException, "");
      if (options.all) callback(null, allowed);
      else callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

/** A URL's host without IPv6 brackets, nor the trailing dots of a fully qualified name (`localhost.` is `localhost`). */
export function bareHost(url: URL): string {
  return url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname.replace(/\.+$/, "");
}
