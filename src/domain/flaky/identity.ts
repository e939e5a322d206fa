import { hash } from "node:crypto";

/** RFC 4122's namespace for URLs, the namespace Trunk's test ids are derived in. */
const NAMESPACE_URL = Buffer.from("6ba7b8119dad11d180b400c04fd430c8", "hex");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));
/** The namespace followed by the name, reused: ids are derived by the hundred thousand per upload. */
let scratch = Buffer.alloc(1024);
NAMESPACE_URL.copy(scratch);

/** A name-based (SHA-1, version 5) UUID of `name` in the URL namespace. */
export function uuidV5(name: string): string {
  if (16 + name.length * 3 > scratch.length) {
    scratch = Buffer.alloc(2 * (16 + name.length * 3));
    NAMESPACE_URL.copy(scratch);
  }
  const length = 16 + scratch.write(name, 16, "utf8");
  const d = hash("sha1", scratch.subarray(0, length), "buffer");
  const h = (i: number) => HEX[d[i]!]!;
  // Version 5 in the high nibble of byte 6, the RFC 4122 variant in the high bits of byte 8.
  const version = HEX[(d[6]! & 0x0f) | 0x50]!;
  const variant = HEX[(d[8]! & 0x3f) | 0x80]!;
  return `${h(0)}${h(1)}${h(2)}${h(3)}-${h(4)}${h(5)}-${version}${h(7)}-${variant}${h(9)}-${h(10)}${h(11)}${h(12)}${h(13)}${h(14)}${h(15)}`;
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
