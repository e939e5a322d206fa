import { hash } from "node:crypto";

/** RFC 4122's namespace for URLs, the namespace Trunk's test ids are derived in. */
const NAMESPACE_URL = Buffer.from("6ba7b8119dad11d180b400c04fd430c8", "hex");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A name-based (SHA-1, version 5) UUID of `name` in the URL namespace. */
export function uuidV5(name: string): string {
  const digest = hash("sha1", Buffer.concat([NAMESPACE_URL, Buffer.from(name, "utf8")]), "buffer");
  digest[6] = (digest[6]! & 0x0f) | 0x50;
  digest[8] = (digest[8]! & 0x3f) | 0x80;
  const hex = digest.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

export type TestIdentity = { file: string; classname: string; parent: string; name: string };

/**
 * A test case's id, derived as Trunk's uploader derives it so ids agree across tools: the v5
 * UUID of `org#host/owner/name#file#classname#parent#name#JUNIT_TESTCASE` (with `#variant`
 * when there is one). A testcase that carries its own v5 UUID keeps it; one whose id starts
 * with `trunk:` is hashed from the repository and that id. With a variant, the id is hashed
 * once more with the variant (as Trunk's current uploader does), so the same test in two
 * variants has two ids.
 */
export function testCaseId(orgSlug: string, repoFullName: string, test: TestIdentity, variant = "", explicitId = ""): string {
  const once = (id: string) => {
    const withVariant = (values: string[]) => uuidV5((variant ? [...values, variant] : values).join("#"));
    if (id.startsWith("trunk:")) return withVariant([orgSlug, repoFullName, id]);
    if (isUuid(id) && id[14] === "5") return variant ? uuidV5(`${id}#${variant}`) : id.toLowerCase();
    return withVariant([orgSlug, repoFullName, test.file, test.classname, test.parent, test.name, "JUNIT_TESTCASE"]);
  };
  const id = once(explicitId);
  return variant ? once(id) : id;
}
