import { createHash } from "node:crypto";
import { compress, init } from "@bokuweb/zstd-wasm";
import { pack } from "tar-stream";
import { createToken, revokeToken } from "../../src/auth/tokens.js";
import { encodeTestReport } from "../../src/flaky/bundle.js";
import { BACKENDS } from "../support/backends.js";
import { ApiClient, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * Trunk's analytics CLI (`trunk flakytests upload` with TRUNK_PUBLIC_API_ADDRESS pointed at
 * Greenline), request for request as trunk-io/analytics-cli sends them: getQuarantineConfig,
 * createBundleUpload, the PUT of the bundle to the URL answered, and its telemetry.
 */

const ORG = "acme";
const WEB = repo("web");
const SHA = "c0ffee".padEnd(40, "0");
const HOUR = 3600_000;

/** RFC 4122 v5 UUID in the URL namespace, as the client derives test ids (context/src/meta/id.rs). */
function uuidV5(name: string): string {
  const hash = createHash("sha1").update(Buffer.from("6ba7b8119dad11d180b400c04fd430c8", "hex")).update(name).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
const clientId = (t: { file?: string; className: string; parentName: string; name: string }) =>
  uuidV5([ORG, `${WEB.host}/${WEB.owner}/${WEB.name}`, t.file ?? "", t.className, t.parentName, t.name, "JUNIT_TESTCASE"].join("#"));

/** A report of the kinds of results the client meets: passes, failures (one with an id attribute), a skip, a retry. */
function junitXml(at: Date): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="checkout" timestamp="${at.toISOString()}" tests="6" failures="3">
    <testcase classname="shop.Checkout" name="pays" file="src/checkout.test.ts" time="0.1"/>
    <testcase classname="shop.Checkout" name="refunds" file="src/checkout.test.ts" time="0.2"><failure message="expected 200, got 500">at refunds (src/checkout.test.ts:9)</failure></testcase>
    <testcase classname="shop.Checkout" name="ships" file="src/checkout.test.ts"><failure message="timeout after 5000 ms">at ships</failure></testcase>
    <testcase classname="shop.Checkout" name="taxes" file="src/checkout.test.ts" id="trunk:checkout-taxes"><failure message="rounding">at taxes</failure></testcase>
    <testcase classname="shop.Checkout" name="discounts" file="src/checkout.test.ts"><skipped/></testcase>
  </testsuite>
</testsuites>`;
}

/** internal.bin: the client's parse of the same report (cli/src/context.rs write_test_report_to_file). */
function internalBin(at: Date, runs = defaultRuns()): Uint8Array {
  const seconds = Math.floor(at.getTime() / 1000);
  return encodeTestReport({
    testResults: [
      { testCaseRuns: runs.map((r) => ({ ...r, parentName: "checkout", classname: "shop.Checkout", file: "src/checkout.test.ts", startedAt: { seconds, nanos: 0 }, finishedAt: { seconds: seconds + 1, nanos: 0 } })) },
    ],
    uploaderMetadata: { variant: "" },
  });
}
function defaultRuns() {
  return [
    { name: "pays", status: 1 },
    { name: "refunds", status: 2, testOutput: { message: "expected 200, got 500", text: "at refunds (src/checkout.test.ts:9)" } },
    { name: "ships", status: 2, testOutput: { message: "timeout after 5000 ms", text: "at ships" } },
    { name: "taxes", status: 2, id: "trunk:checkout-taxes", testOutput: { message: "rounding", text: "at taxes" } },
    { name: "discounts", status: 3 },
  ];
}

type BundleParts = { id: string; xml?: string | null; bin?: Uint8Array | null; codeowners?: string; repoName?: string; org?: string; envs?: Record<string, string> };

/** meta.json as the client writes it (bundle/src/bundle_meta.rs BundleMetaV0_7_8, context/src/repo/mod.rs BundleRepo). */
function metaJson(parts: BundleParts, at: Date) {
  const files = parts.xml === null ? [] : [{ original_path: "/ci/reports/junit.xml", original_path_rel: "reports/junit.xml", path: "junit/0", owners: [], team: null }];
  return {
    version: "1",
    cli_version: "cargo=0.11.9 git=fcbc1bd rustc=1.89.0",
    org: parts.org ?? ORG,
    repo: {
      repo: { host: WEB.host, owner: WEB.owner, name: parts.repoName ?? WEB.name },
      repo_root: "/ci",
      repo_url: `https://github.com/acme/${parts.repoName ?? WEB.name}.git`,
      repo_head_sha: SHA,
      repo_head_sha_short: SHA.slice(0, 7),
      repo_head_branch: "refs/heads/feature/pay",
      repo_head_commit_epoch: Math.floor(at.getTime() / 1000),
      repo_head_commit_message: "Pay faster",
      repo_head_author_name: "Ada",
      repo_head_author_email: "ada@example.com",
    },
    bundle_upload_id: parts.id,
    tags: [],
    file_sets: [{ file_set_type: "Junit", files, glob: "reports/*.xml" }],
    envs: parts.envs ?? { CI: "true", GITHUB_ACTIONS: "true", GITHUB_REF: "refs/pull/42/merge", GITHUB_SERVER_URL: "https://github.com", GITHUB_REPOSITORY: "acme/web", GITHUB_RUN_ID: "777" },
    upload_time_epoch: Math.floor(at.getTime() / 1000),
    test_command: null,
    os_info: "linux",
    quarantined_tests: [],
    codeowners: parts.codeowners === undefined ? null : { path: "/ci/.github/CODEOWNERS" },
    use_uncloned_repo: false,
    num_files: files.length,
    num_tests: 5,
    command_line: "trunk flakytests upload --junit-paths reports/*.xml",
    trunk_envs: {},
    bundle_upload_id_v2: parts.id,
    variant: null,
    internal_bundled_file: parts.bin === null ? null : { original_path: "/tmp/x/internal.bin", original_path_rel: null, path: "internal.bin", owners: [], team: null },
    failed_tests: [],
  };
}

/** bundle.tar.zstd as bundler.rs makes it: meta.json, internal.bin, junit/<n>, CODEOWNERS; zstd level 15. */
async function bundle(parts: BundleParts, at: Date): Promise<Uint8Array> {
  const tar = pack();
  tar.entry({ name: "meta.json" }, JSON.stringify(metaJson(parts, at)));
  if (parts.bin !== null) tar.entry({ name: "internal.bin" }, Buffer.from(parts.bin ?? internalBin(at)));
  if (parts.xml !== null) tar.entry({ name: "junit/0" }, parts.xml ?? junitXml(at));
  if (parts.codeowners !== undefined) tar.entry({ name: "CODEOWNERS" }, parts.codeowners);
  tar.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of tar) chunks.push(chunk as Buffer);
  return compress(Buffer.concat(chunks), 15);
}

const put = (url: string, body: Uint8Array) => fetch(url, { method: "PUT", headers: { "content-type": "application/octet-stream" }, body });

beforeAll(async () => {
  await init();
});

describe.each(BACKENDS)("Trunk's analytics CLI against Greenline on $name", (backend) => {
  const clock = new TestClock(Date.parse("2026-11-22T12:00:00Z"));
  let server: TestServer;
  const scope = { repo: WEB, org_url_slug: ORG };
  const createUpload = (body: Record<string, unknown> = {}) =>
    server.api.ok<{ id: string; idV2: string; url: string; key: string }>("metrics/createBundleUpload", {
      repo: WEB,
      orgUrlSlug: ORG,
      clientVersion: "trunk-analytics-cli cargo=0.11.9",
      remoteUrls: ["https://github.com/acme/web.git"],
      externalId: null,
      testCollectionShortId: null,
      ...body,
    });
  const failing = (s: TestServer) =>
    s.api.ok("flaky-tests/list-failing-tests", { ...scope, start_time: new Date(clock.ms - 24 * HOUR).toISOString(), end_time: new Date(clock.ms + 1).toISOString(), page_query: { page_size: 100 } });

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
  });
  afterAll(() => server?.close());

  test("a bundle lands exactly as a JUnit upload of the same XML does", async () => {
    const at = new Date(clock.ms - HOUR);
    const upload = await createUpload();
    expect(upload.idV2).toBe(upload.id);
    expect(upload.url.startsWith(`${server.url}/v1/bundles/${upload.id}?`)).toBe(true);
    const codeowners = "src/checkout.test.ts @acme/payments\n";
    const response = await put(upload.url, await bundle({ id: upload.id, codeowners }, at));
    expect([response.status, await response.json()]).toEqual([200, { id: upload.id, stored: true, test_cases: 5, failures: 3 }]);

    // The same report uploaded as JUnit XML to a second Greenline, same clock, same repository.
    const twin = await startTestServer(backend, { now: clock.now });
    try {
      await twin.api.ok("flaky-tests/upload", {
        ...scope,
        commit_sha: SHA,
        branch: "feature/pay",
        pr_number: 42,
        job_url: "https://github.com/acme/web/actions/runs/777",
        junit_xml: [junitXml(at)],
        codeowners,
      });
      const [fromBundle, fromJUnit] = [await failing(server), await failing(twin)];
      expect(fromBundle.tests).toHaveLength(3);
      expect(fromBundle).toEqual(fromJUnit);
      for (const test of fromJUnit.tests as { id: string }[]) {
        const details = (s: TestServer) => s.api.ok("flaky-tests/get-test-details", { ...scope, test_id: test.id });
        expect(await details(server)).toEqual(await details(twin));
      }
      const refunds = await server.api.ok("flaky-tests/get-test-details", { ...scope, test_id: clientId({ file: "src/checkout.test.ts", className: "shop.Checkout", parentName: "checkout", name: "refunds" }) });
      expect(refunds.test).toMatchObject({ name: "refunds", codeowners: ["@acme/payments"] });
    } finally {
      await twin.close();
    }
  });

  test("the same bundle PUT twice is stored once", async () => {
    const upload = await createUpload();
    const body = await bundle({ id: upload.id }, new Date(clock.ms - HOUR));
    const before = (await failing(server)).tests;
    expect((await put(upload.url, body)).status).toBe(200);
    const again = await put(upload.url, body);
    expect([again.status, await again.json()]).toEqual([200, { id: upload.id, stored: false, test_cases: 0, failures: 0 }]);
    const after = (await failing(server)).tests as { name: string }[];
    expect(after.map((t) => t.name).sort()).toEqual(before.map((t: { name: string }) => t.name).sort());
    const refunds = await server.api.ok("flaky-tests/get-test-details", { ...scope, test_id: clientId({ file: "src/checkout.test.ts", className: "shop.Checkout", parentName: "checkout", name: "refunds" }) });
    // Two bundles of the test so far (the first test's and this one), not three.
    expect(refunds.test.failure_rate_last_7d).toBe(1);
    expect(refunds.test.most_common_failures[0].occurrence_count).toBe(2);

    // Sent twice at once (a retry racing the first attempt): one of them stores it.
    const raced = await createUpload();
    const racedBody = await bundle({ id: raced.id }, new Date(clock.ms - HOUR));
    const answers = await Promise.all([put(raced.url, racedBody), put(raced.url, racedBody)]);
    const bodies = (await Promise.all(answers.map((a) => a.json()))) as { stored: boolean }[];
    expect([answers.map((a) => a.status), bodies.map((b) => b.stored).sort()]).toEqual([
      [200, 200],
      [false, true],
    ]);
    const afterRace = await server.api.ok("flaky-tests/get-test-details", { ...scope, test_id: clientId({ file: "src/checkout.test.ts", className: "shop.Checkout", parentName: "checkout", name: "refunds" }) });
    expect(afterRace.test.most_common_failures[0].occurrence_count).toBe(3);
  });

  test("getQuarantineConfig answers the quarantined failures by the ids the client computed, including a testcase's own id", async () => {
    const refunds = { name: "refunds", parentName: "checkout", className: "shop.Checkout", file: "src/checkout.test.ts" };
    const ships = { name: "ships", parentName: "checkout", className: "shop.Checkout", file: "src/checkout.test.ts" };
    const taxes = { name: "taxes", parentName: "checkout", className: "shop.Checkout", file: "src/checkout.test.ts" };
    // The client keeps a testcase's id attribute as its id (cli/src/context_quarantine.rs convert_case_to_test).
    const failures = [
      { ...refunds, id: clientId(refunds) },
      { ...ships, id: clientId(ships) },
      { ...taxes, id: "trunk:checkout-taxes" },
    ].map((t) => ({ ...t, timestamp_millis: clock.ms - HOUR, is_quarantined: false, failure_message: "boom", variant: "" }));
    const ask = () => server.api.ok("metrics/getQuarantineConfig", { repo: WEB, remoteUrls: ["https://github.com/acme/web.git"], orgUrlSlug: ORG, testIdentifiers: failures });
    expect(await ask()).toEqual({ isDisabled: false, testIds: [] });

    await server.api.ok("flaky-tests/set-quarantine-setting", { ...scope, test_id: clientId(refunds), setting: "always" });
    const taxesId = uuidV5([ORG, "github.com/acme/web", "trunk:checkout-taxes"].join("#"));
    await server.api.ok("flaky-tests/set-quarantine-setting", { ...scope, test_id: taxesId, setting: "always" });
    expect(await ask()).toEqual({ isDisabled: false, testIds: [clientId(refunds), "trunk:checkout-taxes"] });
  });

  test("a quarantined failure uploaded in a bundle is stored as a failure and stays quarantined", async () => {
    const upload = await createUpload();
    const runs = defaultRuns().map((r) => (r.name === "refunds" ? { ...r, isQuarantined: true } : r));
    expect((await put(upload.url, await bundle({ id: upload.id, bin: internalBin(new Date(clock.ms - HOUR), runs) }, new Date(clock.ms - HOUR)))).status).toBe(200);
    const quarantined = await server.api.ok("flaky-tests/list-quarantined-tests", { ...scope, page_query: { page_size: 100 } });
    expect(quarantined.quarantined_tests.map((t: { name: string }) => t.name).sort()).toEqual(["refunds", "taxes"]);
  });

  test("a bad token answers 401 and another organization's slug 404, which the client reports as a bad token and a bad slug", async () => {
    const stranger = new (server.api.constructor as typeof import("../support/harness.js").ApiClient)(server.url, "glt_not-a-token");
    for (const op of ["metrics/createBundleUpload", "metrics/getQuarantineConfig"]) {
      const answer = await stranger.call(op, { repo: WEB, orgUrlSlug: ORG, remoteUrls: [], testIdentifiers: [] });
      expect([op, answer.status, answer.body.error.code]).toEqual([op, 401, "unauthenticated"]);
      const wrongOrg = await server.api.call(op, { repo: WEB, orgUrlSlug: "globex", remoteUrls: [], testIdentifiers: [] });
      expect([op, wrongOrg.status, wrongOrg.body.error.message]).toEqual([op, 404, 'organization "globex" not found (the token belongs to "acme")']);
    }
  });

  test("a truncated bundle is refused with a clear error and nothing is stored; the whole one then is", async () => {
    const other = { repo: repo("truncated"), org_url_slug: ORG };
    const upload = await createUpload({ repo: other.repo });
    const body = await bundle({ id: upload.id, repoName: "truncated" }, new Date(clock.ms - HOUR));
    for (const cut of [body.length - 7, Math.floor(body.length / 2), 10]) {
      const answer = await put(upload.url, body.subarray(0, cut));
      const error = ((await answer.json()) as { error: { code: string; message: string } }).error;
      expect([cut, answer.status, error.code]).toEqual([cut, 400, "invalid_argument"]);
      expect(error.message).toMatch(/^\(body\): the bundle (is not a complete zstd stream|is not a complete tar archive|lacks)/);
    }
    const listed = () =>
      server.api.ok("flaky-tests/list-failing-tests", { ...other, start_time: new Date(clock.ms - 24 * HOUR).toISOString(), end_time: new Date(clock.ms + 1).toISOString(), page_query: { page_size: 100 } });
    expect((await listed()).tests).toEqual([]);
    const whole = await put(upload.url, body);
    expect([whole.status, ((await whole.json()) as { stored: boolean }).stored]).toEqual([200, true]);
    expect((await listed()).tests).toHaveLength(3);
  });

  test("not a bundle, a bundle that unpacks past the limit, and a bundle for another repository are refused", async () => {
    const upload = await createUpload();
    const notZstd = await put(upload.url, Buffer.from("<testsuites/>"));
    expect([notZstd.status, ((await notZstd.json()) as any).error.message]).toEqual([400, "(body): the bundle is not zstd-compressed (no zstd frame at its start)"]);
    const bomb = await put(upload.url, compress(Buffer.alloc(65 * 1024 * 1024), 1));
    expect([bomb.status, ((await bomb.json()) as any).error.message]).toEqual([400, "(body): the bundle unpacks to more than the limit of 64 MiB"]);
    // A frame declaring no size: 600 RLE blocks of 128 KiB each (75 MiB from 2 KB), cut off while it streams.
    const blocks = Array.from({ length: 600 }, (_, i) => {
      const header = ((128 * 1024) << 3) | (1 << 1) | (i === 599 ? 1 : 0);
      return Buffer.from([header & 0xff, (header >> 8) & 0xff, (header >> 16) & 0xff, 0x00]);
    });
    const streamed = await put(upload.url, Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3]), ...blocks]));
    expect([streamed.status, ((await streamed.json()) as any).error.message]).toEqual([400, "(body): the bundle unpacks to more than the limit of 64 MiB"]);
    const badXml = await put(upload.url, await bundle({ id: upload.id, xml: "<testsuite><testcase name=" }, clock.now()));
    const badXmlError = ((await badXml.json()) as any).error;
    expect([badXml.status, badXmlError.details[0].path]).toEqual([400, "junit/0"]);
    expect(badXmlError.message).toMatch(/^junit\/0: is not a JUnit report: line 1, column \d+/);
    const otherId = await put(upload.url, await bundle({ id: "0197a000-0000-7000-8000-000000000000" }, clock.now()));
    expect([otherId.status, ((await otherId.json()) as any).error]).toEqual([
      400,
      {
        code: "invalid_argument",
        message: `meta.json: bundle_upload_id: is "0197a000-0000-7000-8000-000000000000", but the upload URL was made for bundle "${upload.id}"`,
        details: [{ path: "meta.json: bundle_upload_id", message: `is "0197a000-0000-7000-8000-000000000000", but the upload URL was made for bundle "${upload.id}"` }],
      },
    ]);
    const elsewhere = await put(upload.url, await bundle({ id: upload.id, repoName: "api" }, clock.now()));
    expect([elsewhere.status, ((await elsewhere.json()) as any).error.message]).toEqual([400, "meta.json: repo.repo: is github.com/acme/api, but the upload URL was made for github.com/acme/web"]);
  });

  test("createBundleUpload for another organization's repository answers 404 as a missing repository, and no URL", async () => {
    const globex = await server.clientFor("globex");
    const theirs = repo("theirs");
    await globex.ok("flaky-tests/upload", { repo: theirs, org_url_slug: "globex", commit_sha: SHA, branch: "main", junit_xml: ["<testsuite><testcase name='a'/></testsuite>"] });
    const answer = await server.api.call("metrics/createBundleUpload", { repo: theirs, orgUrlSlug: ORG, remoteUrls: [] });
    expect([answer.status, answer.body]).toEqual([404, { error: { code: "not_found", message: `repository github.com/${theirs.owner}/theirs not found`, details: [] } }]);
    // The same answer as the JUnit upload of the same repository gives.
    const upload = await server.api.call("flaky-tests/upload", { ...scope, repo: theirs, commit_sha: SHA, branch: "main", junit_xml: ["<testsuite/>"] });
    expect([upload.status, upload.body]).toEqual([answer.status, answer.body]);
    // Its own repositories, known or new, still get their URLs.
    expect((await createUpload({ repo: repo("brand-new") })).url).toContain("/v1/bundles/");
  });

  test("a bundle URL's grant and signature never reach the logs", async () => {
    const upload = await createUpload();
    const url = new URL(upload.url);
    const answer = await put(upload.url, await bundle({ id: upload.id }, new Date(clock.ms - HOUR)));
    expect(answer.status).toBe(200);
    const logs = server.logs.join("");
    expect(logs).toContain(`/v1/bundles/${upload.id}?grant=[redacted]&signature=[redacted]`);
    expect(logs).not.toContain(url.searchParams.get("signature")!);
    expect(logs).not.toContain(url.searchParams.get("grant")!);
  });

  test("a bundle with only internal.bin (the client given its own reports) lands from it", async () => {
    const other = { repo: repo("binary"), org_url_slug: ORG };
    const upload = await createUpload({ repo: other.repo });
    const answer = await put(upload.url, await bundle({ id: upload.id, repoName: "binary", xml: null }, new Date(clock.ms - HOUR)));
    expect([answer.status, await answer.json()]).toEqual([200, { id: upload.id, stored: true, test_cases: 5, failures: 3 }]);
  });

  test("an expired URL answers 403 saying so; an altered one 403 too", async () => {
    const upload = await createUpload();
    const body = await bundle({ id: upload.id }, new Date(clock.ms - HOUR));
    const url = new URL(upload.url);
    const altered = new URL(url);
    altered.searchParams.set("signature", `${url.searchParams.get("signature")!.slice(0, -2)}AA`);
    const forged = new URL(url);
    const grant = JSON.parse(Buffer.from(url.searchParams.get("grant")!, "base64url").toString());
    forged.searchParams.set("grant", Buffer.from(JSON.stringify({ ...grant, exp: grant.exp + 10 * 365 * 24 * HOUR })).toString("base64url"));
    const otherBundle = new URL(url.href.replace(upload.id, "0197a000-0000-7000-8000-000000000000"));
    for (const bad of [altered, forged]) {
      const answer = await put(bad.href, body);
      expect([answer.status, ((await answer.json()) as any).error.message]).toEqual([403, "the upload URL's signature is not valid (altered, or signed with another key): ask createBundleUpload for a new one"]);
    }
    const moved = await put(otherBundle.href, body);
    expect([moved.status, ((await moved.json()) as any).error.message]).toEqual([403, "the upload URL was signed for another bundle"]);
    const bare = await put(`${server.url}/v1/bundles/${upload.id}`, body);
    expect(bare.status).toBe(403);

    clock.advance(15 * 60_000 + 1);
    const late = await put(upload.url, body);
    expect([late.status, ((await late.json()) as any).error]).toEqual([
      403,
      { code: "permission_denied", message: `the upload URL expired at ${new Date(grant.exp).toISOString()}: ask createBundleUpload for a new one`, details: [] },
    ]);
  });

  test("a URL asked for by a token revoked since answers 403 saying so, and stores nothing", async () => {
    const { db } = server.greenline.services;
    const ci = await createToken(db, ORG, "ci (revoked later)");
    const asked = await new ApiClient(server.url, ci.token).ok<{ id: string; url: string }>("metrics/createBundleUpload", { repo: WEB, orgUrlSlug: ORG, remoteUrls: [], externalId: null, testCollectionShortId: null });
    const body = await bundle({ id: asked.id }, new Date(clock.ms - HOUR));
    expect(await revokeToken(db, ci.id, new Date(clock.ms))).toBe(true);
    const answer = await put(asked.url, body);
    expect([answer.status, ((await answer.json()) as any).error]).toEqual([
      403,
      { code: "permission_denied", message: "the API token that asked for this upload URL has been revoked: ask createBundleUpload for a new one with a valid token", details: [] },
    ]);
    expect(await db.read((tx) => tx.testUpload.count({ where: { id: asked.id } }))).toBe(0);
  });

  test("the telemetry is accepted whatever its body (protobuf), with the token the client sends", async () => {
    const telemetry = (headers: Record<string, string>) =>
      fetch(`${server.url}/v1/flakytests-cli/upload-metrics`, {
        method: "POST",
        headers: { "content-type": "application/x-protobuf", ...headers },
        body: Buffer.from([0x0a, 0x06, 0x08, 0x00, 0x10, 0x0b, 0x18, 0x09, 0x30, 0x01]),
      });
    const accepted = await telemetry({ "x-api-token": server.api.token });
    expect([accepted.status, await accepted.json()]).toEqual([200, {}]);
    expect((await telemetry({})).status).toBe(401);
  });
});
