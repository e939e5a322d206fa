import { request } from "node:http";
import fc from "fast-check";
import { OPERATIONS } from "../../src/api/operations.js";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";
import { snapshotState } from "../support/snapshot.js";

/** A valid body for each operation, to be broken in one place at a time. */
const VALID_BODIES: Record<string, Record<string, unknown>> = {
  submitPullRequest: { ...prOf(1), priority: "emergency", noBatch: false, emergencyReason: "login is down" },
  cancelPullRequest: prOf(1),
  restartTestsOnPullRequest: prOf(1),
  getSubmittedPullRequest: { ...prOf(1), includeTimeline: true },
  setImpactedTargets: { ...queueOf(), pr: { number: 1, sha: "abcdef0" }, impactedTargets: ["//a", "//b"] },
  getMergeQueueTestingDetails: prOf(1),
  listPullRequests: queueOf(),
  getQueueEvents: { ...queueOf(), limit: 10 },
  checkQueueSetup: { ...queueOf(), mode: "push" },
  freezeQueue: { ...queueOf(), reason: "release", from: "2099-01-01T00:00:00Z", until: "2099-01-02T00:00:00Z", testing: false },
  unfreezeQueue: { ...queueOf(), freezeId: "0190b8a4-0000-7000-8000-000000000000" },
  listQueueFreezes: queueOf(),
  getAuditLog: { page_query: { page_size: 10, page_token: "" }, action: "queue.paused", repo: queueOf().repo },
  createQueue: { ...queueOf("web", "release"), concurrency: 2, mode: "single" },
  deleteQueue: queueOf(),
  getQueue: queueOf(),
  updateQueue: { ...queueOf(), concurrency: 3, state: "running", requiredStatuses: ["ci"] },
  "flaky-tests/list-failing-tests": {
    repo: queueOf().repo,
    org_url_slug: "acme",
    start_time: "2026-11-01T00:00:00Z",
    end_time: "2026-11-02T00:00:00Z",
    page_query: { page_size: 10, page_token: "" },
  },
  "flaky-tests/list-quarantined-tests": { repo: queueOf().repo, org_url_slug: "acme", page_query: { page_size: 10, page_token: "" } },
  "flaky-tests/list-unhealthy-tests": { repo: queueOf().repo, org_url_slug: "acme", page_query: { page_size: 10, page_token: "" } },
  "flaky-tests/get-test-details": { repo: queueOf().repo, org_url_slug: "acme", test_id: "6ba7b810-9dad-51d1-80b4-00c04fd430c8" },
  "flaky-tests/upload": { repo: queueOf().repo, org_url_slug: "acme", commit_sha: "abcdef0", branch: "main", pr_number: 5, junit_xml: ["<testsuite/>"] },
  "flaky-tests/check-quarantine": { repo: queueOf().repo, org_url_slug: "acme", test_ids: ["6ba7b810-9dad-51d1-80b4-00c04fd430c8"] },
  "flaky-tests/set-quarantine-setting": { repo: queueOf().repo, org_url_slug: "acme", test_id: "6ba7b810-9dad-51d1-80b4-00c04fd430c8", setting: "always" },
  "flaky-tests/link-ticket-to-test-case": { repo: queueOf().repo, org_url_slug: "acme", test_case_id: "6ba7b810-9dad-51d1-80b4-00c04fd430c8", ticket_url: "https://tickets.example/T-1" },
  "flaky-tests/get-settings": { repo: queueOf().repo, org_url_slug: "acme" },
  "flaky-tests/backtest-policy": { repo: queueOf().repo, org_url_slug: "acme" },
  "flaky-tests/update-settings": { repo: queueOf().repo, org_url_slug: "acme", settings: { minSamples: 5 } },
  "metrics/getQuarantineConfig": {
    repo: queueOf().repo,
    orgUrlSlug: "acme",
    remoteUrls: ["https://github.com/acme/web.git"],
    testIdentifiers: [{ name: "t", parentName: "p", className: "c", file: "f.ts", id: "6ba7b810-9dad-51d1-80b4-00c04fd430c8", timestamp_millis: 1, is_quarantined: false, failure_message: "boom", variant: "" }],
  },
  "metrics/createBundleUpload": { repo: queueOf().repo, orgUrlSlug: "acme", clientVersion: "trunk-analytics-cli 0.11.9", remoteUrls: [], externalId: null, testCollectionShortId: null },
  "webhooks/create-endpoint": { url: "https://hooks.example/greenline", events: ["pull_request.merged"] },
  "webhooks/update-endpoint": { id: "0190b8a4-0000-7000-8000-000000000000", url: "https://hooks.example/other", events: ["*"], description: "x", enabled: true, rotateSecret: false },
  "webhooks/delete-endpoint": { id: "0190b8a4-0000-7000-8000-000000000000" },
  "webhooks/list-deliveries": { id: "0190b8a4-0000-7000-8000-000000000000", pageSize: 10, pageToken: "" },
  "webhooks/redeliver": { id: "0190b8a4-0000-7000-8000-000000000000", deliveryId: "0190b8a4-0000-7000-8000-000000000001" },
};

/** Characters JSON carries and no store holds: NUL (PostgreSQL refuses it) and lone surrogates. */
const UNSTORABLE = ["\u0000", "\ud800", "\udbff", "\udc00", "\udfff"];
const unstorable = fc.constantFrom(...UNSTORABLE);
/** `text` with an unstorable character put in at `at` (so only that character is wrong). */
const spoil = (text: string, at: number, character: string) => text.slice(0, at % (text.length + 1)) + character + text.slice(at % (text.length + 1));

/** Values of a type no field accepts where a valid body has `value`. */
function wrongValues(value: unknown, nullable: boolean, emptyOk: boolean): fc.Arbitrary<unknown> {
  const others: fc.Arbitrary<unknown>[] = [...(nullable ? [] : [fc.constant(null)]), fc.array(fc.boolean(), { maxLength: 3 }).map((a) => ({ unexpected: a }))];
  if (typeof value === "string") {
    others.push(fc.integer(), fc.boolean(), ...(emptyOk ? [] : [fc.constant(""), fc.constant(" ")]), fc.string({ minLength: 300, maxLength: 400 }));
    others.push(
      fc.tuple(fc.nat(), unstorable).map(([at, c]) => spoil(value, at, c)),
      fc.tuple(fc.string(), unstorable, fc.string()).map((parts) => parts.join("")),
    );
  }
  if (typeof value === "number")
    others.push(
      fc.constantFrom(-1, 0.5, 4294967296, 1e308, -0.0001),
      fc.string({ minLength: 1 }).filter((s) => !/^\d+$/.test(s)),
    );
  if (typeof value === "boolean") others.push(fc.integer(), fc.constantFrom("true", "yes", "1"));
  if (Array.isArray(value)) others.push(fc.integer(), fc.array(fc.integer(), { minLength: 1, maxLength: 3 }));
  if (Array.isArray(value) && typeof value[0] === "string") others.push(fc.tuple(fc.nat(), unstorable).map(([at, c]) => [spoil(value[0], at, c), ...value.slice(1)]));
  if (value && typeof value === "object" && !Array.isArray(value)) others.push(fc.integer(), fc.string(), fc.constant([]));
  return fc.oneof(...others);
}

/** Paths of every leaf and object field of a body. */
function fieldPaths(body: unknown, prefix: string[] = []): string[][] {
  if (!body || typeof body !== "object" || Array.isArray(body)) return [prefix];
  return [prefix, ...Object.entries(body).flatMap(([k, v]) => fieldPaths(v, [...prefix, k]))].filter((p) => p.length > 0);
}

function getAt(body: unknown, path: string[]): unknown {
  return path.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], body);
}

function setAt(body: Record<string, unknown>, path: string[], value: unknown, remove: boolean): Record<string, unknown> {
  const copy = structuredClone(body);
  let node: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  const last = path.at(-1)!;
  if (remove) delete node[last];
  else node[last] = value;
  return copy;
}

/** Fields where null is a valid value (priority: null means the default). */
const NULLABLE = new Set(["priority", "ticket_url", "externalId", "testCollectionShortId"]);

/** Fields of free text, held to the storable-text rule itself (others have a shape: enums, hex, uuids, dates, URLs). */
const FREE_TEXT = new Set([
  "host",
  "owner",
  "name",
  "targetBranch",
  "org_url_slug",
  "branch",
  "requiredStatuses",
  "impactedTargets",
  "page_token",
  "variant",
  "codeowners",
  "classname",
  "file",
  "parent",
  "id",
  "reason",
  "emergencyReason",
]);

const escape = (character: string) => `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** Optional fields: removing them leaves a valid body. */
const OPTIONAL = new Set([
  "priority",
  "noBatch",
  "includeTimeline",
  "limit",
  "sha",
  "concurrency",
  "mode",
  "state",
  "requiredStatuses",
  "page_token",
  "pr_number",
  "test_ids",
  "minSamples",
  "remoteUrls",
  "testIdentifiers",
  "clientVersion",
  "externalId",
  "testCollectionShortId",
  "emergencyReason",
  "from",
  "testing",
  "freezeId",
  "action",
  "repo",
]);

function brokenBody(operation: string): fc.Arbitrary<unknown> {
  const valid = VALID_BODIES[operation]!;
  const paths = fieldPaths(valid);
  const mutated = fc.constantFrom(...paths).chain((path) => {
    const removable = !OPTIONAL.has(path.at(-1)!);
    return fc.oneof(
      wrongValues(getAt(valid, path), NULLABLE.has(path.at(-1)!), path.at(-1) === "page_token").map((v) => setAt(valid, path, v, false)),
      ...(removable ? [fc.constant(setAt(valid, path, undefined, true))] : []),
    );
  });
  const random = fc.oneof(fc.anything({ maxDepth: 3 }), fc.jsonValue({ maxDepth: 3 }));
  return fc.oneof({ weight: 3, arbitrary: mutated }, { weight: 1, arbitrary: random });
}

/** Paths of every string in a body, inside arrays too. */
function stringPaths(body: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (typeof body === "string") return [prefix];
  if (Array.isArray(body)) return body.flatMap((v, i) => stringPaths(v, [...prefix, i]));
  if (body && typeof body === "object") return Object.entries(body).flatMap(([k, v]) => stringPaths(v, [...prefix, k]));
  return [];
}

function spoilAt(body: Record<string, unknown>, path: (string | number)[], character: string): Record<string, unknown> {
  const copy = structuredClone(body);
  let node = copy as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path.at(-1)!;
  node[last] = spoil(node[last] as string, Math.floor((node[last] as string).length / 2), character);
  return copy;
}

/** Valid bodies with the optional string fields the samples above leave out. */
const MORE_STRING_FIELDS: [string, Record<string, unknown>][] = [
  ["flaky-tests/upload", { ...VALID_BODIES["flaky-tests/upload"], variant: "linux", job_url: "https://ci.example/jobs/1", codeowners: "* @acme/web\n" }],
  ["flaky-tests/check-quarantine", { ...VALID_BODIES["flaky-tests/check-quarantine"], variant: "linux", tests: [{ name: "t", classname: "c", file: "f.ts", parent: "p", id: "x" }] }],
];

describe.each(BACKENDS)("bad input on $name", (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
    await server.api.ok("createQueue", queueOf());
    await server.api.ok("submitPullRequest", prOf(1));
  });
  afterAll(() => server?.close());

  test("every POST operation has a valid sample body (the fuzz test breaks them)", () => {
    expect(Object.keys(VALID_BODIES).sort()).toEqual(
      OPERATIONS.filter((o) => o.method === "post")
        .map((o) => o.path.slice(1))
        .sort(),
    );
  });

  test("thousands of generated bad bodies: never a 5xx, always an error naming a field, and nothing stored changes", async () => {
    const before = await snapshotState(server.greenline.services.db);
    let requests = 0;
    for (const operation of Object.keys(VALID_BODIES)) {
      await fc.assert(
        fc.asyncProperty(brokenBody(operation), async (body) => {
          requests++;
          const text = body === undefined ? "" : JSON.stringify(body);
          const response = await server.api.call(operation, text);
          expect(response.status).toBeLessThan(500);
          if (response.status === 200) throw new Error(`accepted a broken body for ${operation}: ${text.slice(0, 300)}`);
          expect(response.body.error.code).toEqual(expect.any(String));
          if (response.status === 400) expect(response.body.error.details.length).toBeGreaterThan(0);
        }),
        { numRuns: 150, seed: 20261122 },
      );
    }
    expect(requests).toBeGreaterThanOrEqual(1500);
    expect(await snapshotState(server.greenline.services.db)).toBe(before);
  });

  test("a NUL or a lone surrogate in any string field is a 400 naming the field (and the rule, for free text); nothing stored changes", async () => {
    const before = await snapshotState(server.greenline.services.db);
    const cases = [...Object.entries(VALID_BODIES), ...MORE_STRING_FIELDS].flatMap(([operation, body]) => stringPaths(body).map((path) => [operation, body, path] as const));
    expect(cases.length).toBeGreaterThan(60);
    for (const [operation, body, path] of cases) {
      for (const character of UNSTORABLE) {
        const response = await server.api.call(operation, spoilAt(body, path, character));
        // JUnit reports are refused by their scanner, which names the report as the ingest does.
        const field = path[0] === "junit_xml" ? `junit_xml[${path[1]}]` : path.join(".");
        const detail = response.status === 400 ? response.body.error.details.find((d: { path: string }) => d.path === field) : undefined;
        expect([operation, field, escape(character), response.status, detail?.path]).toEqual([operation, field, escape(character), 400, field]);
        const rule = character === "\u0000" ? /NUL characters/ : /lone surrogate/;
        if (FREE_TEXT.has(String(path.findLast((k) => typeof k === "string")))) expect([field, detail.message]).toEqual([field, expect.stringMatching(rule)]);
      }
    }
    expect(await snapshotState(server.greenline.services.db)).toBe(before);
    // ~4,000 requests: seconds alone, but more than a minute when the machine is loaded.
  }, 180_000);

  test("a NUL in a metrics query is a 400 naming the parameter", async () => {
    const bad = await server.api.get("getMergeQueueMetrics?repo=acme/w%00eb&repoHost=github.com");
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.details).toEqual([{ path: "repo", message: "must not contain NUL characters (NUL at index 6)" }]);
  });

  test("numeric settings anywhere in their documented range, maxima included: the queue keeps answering through submissions and the worker", async () => {
    const MAX = 4294967295;
    const edge = fc.oneof(fc.constantFrom(1, 2, 4_190_000_000, 4_200_000_000, MAX - 1, MAX), fc.integer({ min: 1, max: MAX }));
    const settings = fc.record(
      {
        concurrency: edge,
        bisectionConcurrency: edge,
        testingTimeoutMinutes: edge,
        pendingFailureDepth: edge,
        batchingMaxWaitTimeMinutes: edge,
        batchingMinSize: edge,
        batch: fc.boolean(),
        canOptimisticallyMerge: fc.boolean(),
      },
      { requiredKeys: [] },
    );
    let round = 0;
    await fc.assert(
      fc.asyncProperty(settings, async (values) => {
        const name = `edge-${round++}`;
        const answers: [string, number][] = [];
        const call = async (operation: string, body: unknown) => answers.push([operation, (await server.api.call(operation, body)).status]);
        await call("createQueue", { ...queueOf(name), ...values });
        for (const n of [1, 2, 3]) await call("submitPullRequest", prOf(n, name));
        await server.greenline.worker.drain();
        await call("submitPullRequest", prOf(4, name));
        await call("updateQueue", { ...queueOf(name), ...values, testingTimeoutMinutes: MAX, batchingMaxWaitTimeMinutes: MAX });
        await server.greenline.worker.drain();
        for (const n of [1, 4]) await call("getSubmittedPullRequest", prOf(n, name));
        await call("getQueue", queueOf(name));
        expect(answers.filter(([, status]) => status !== 200)).toEqual([]);
        const failed = await server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { lastError: { not: null } }, select: { kind: true, lastError: true } }));
        expect(failed).toEqual([]);
      }),
      { numRuns: 12, seed: 20261124 },
    );
  });

  test("garbage that is not JSON is a 400 that says so", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1, maxLength: 200 }).filter((s) => {
          try {
            JSON.parse(s);
            return false;
          } catch {
            return true;
          }
        }),
        async (text) => {
          const response = await server.api.call("getQueue", text);
          expect(response.status).toBe(400);
          expect(response.body.error.message).toMatch(/malformed JSON/);
        },
      ),
      { numRuns: 200 },
    );
  });

  test.each([
    ["a small body", ""],
    ["a body with a string decoded in place", "x".repeat(70_000)],
  ])("invalid UTF-8 in %s is a 400 naming the body, not read as replacement characters", async (_what, padding) => {
    const body = Buffer.concat([Buffer.from(`{"padding": "${padding}", "repo": {"host": "github.com", "owner": "acme", "name": "we`), Buffer.from([0xff, 0xfe]), Buffer.from('b"}, "targetBranch": "main"}')]);
    const response = await fetch(`${server.url}/v1/getQueue`, { method: "POST", headers: { "content-type": "application/json", "x-api-token": server.api.token }, body });
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as any;
    expect(error.code).toBe("invalid_argument");
    expect(error.details).toEqual([{ path: "(body)", message: "is not valid UTF-8" }]);
  });

  test.each([["[]"], ["null"], ['"text"'], ["42"], ["{}"]])("a body of %s is 400", async (text) => {
    const response = await server.api.call("getQueue", text);
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe("invalid_argument");
  });

  test("a missing field is named with its full path", async () => {
    const response = await server.api.call("getSubmittedPullRequest", { repo: { host: "github.com", owner: "acme" }, targetBranch: "main", pr: {} });
    expect(response.status).toBe(400);
    expect(response.body.error.details.map((d: { path: string }) => d.path).sort()).toEqual(["pr.number", "repo.name"]);
    expect(response.body.error.message).toContain("repo.name");
  });

  test.each([["text/plain"], ["application/x-www-form-urlencoded"], [undefined]])("content type %p is 415", async (type) => {
    const headers: Record<string, string> = { "x-api-token": server.api.token };
    if (type) headers["content-type"] = type;
    const response = await fetch(`${server.url}/v1/getQueue`, { method: "POST", headers, body: JSON.stringify(queueOf()) });
    expect(response.status).toBe(415);
    expect(((await response.json()) as any).error.code).toBe("unsupported_media_type");
  });

  test.each([[""], ["; charset=utf-8"], [" ;"]])("an empty media type (Content-Type %p) is 415 with a complete message", async (type) => {
    const response = await server.api.call("getQueue", queueOf(), { headers: { "content-type": type } });
    expect(response.status).toBe(415);
    expect(response.body.error.message).toBe("Content-Type must be application/json");
  });

  test("application/json with a charset is accepted", async () => {
    const response = await server.api.call("getQueue", queueOf(), { headers: { "content-type": "application/json; charset=utf-8" } });
    expect(response.status).toBe(200);
  });

  test("a body declared over 20 MiB is refused before it is sent", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${server.url}/v1/setImpactedTargets`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-token": server.api.token, "content-length": String(20 * 1024 * 1024 + 1) },
      });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode!);
        req.destroy();
      });
      req.on("error", reject);
      // Only the first bytes are ever sent: the answer must not wait for the rest.
      req.write('{"impactedTargets": [');
    });
    expect(status).toBe(413);
  });

  test("a chunked body that grows past 20 MiB is cut off with 413", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${server.url}/v1/setImpactedTargets`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-token": server.api.token, "transfer-encoding": "chunked" },
      });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode!);
        req.destroy();
      });
      req.on("error", reject);
      const chunk = `"${"x".repeat(1024 * 1024 - 4)}",`;
      req.write('{"impactedTargets": [');
      let sent = 0;
      const pump = () => {
        while (sent < 25 && req.write(chunk)) sent++;
        if (sent < 25)
          req.once("drain", () => {
            sent++;
            pump();
          });
      };
      pump();
    });
    expect(status).toBe(413);
  });

  test("GET on a POST operation is 405 with Allow, POST on metrics is 405", async () => {
    const get = await fetch(`${server.url}/v1/getQueue`, { headers: { "x-api-token": server.api.token } });
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect(((await get.json()) as any).error.code).toBe("method_not_allowed");
    const post = await server.api.call("getMergeQueueMetrics", {});
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  test("unknown paths are 404 in the JSON error shape", async () => {
    // "/" is the dashboard's (an HTML page); every other unknown path answers the API's way.
    for (const path of ["/v1/nope", "/v2/getQueue", "/v1", "/nope"]) {
      const response = await fetch(`${server.url}${path}`, { method: "POST", headers: { "x-api-token": server.api.token } });
      expect([path, response.status]).toEqual([path, 404]);
      expect(((await response.json()) as any).error.code).toBe("not_found");
    }
  });

  test("metrics query: repo needs repoHost, and the repo must be owner/name", async () => {
    expect((await server.api.get("getMergeQueueMetrics?repo=acme/web")).status).toBe(400);
    expect((await server.api.get("getMergeQueueMetrics?repoHost=github.com")).status).toBe(400);
    const bad = await server.api.get("getMergeQueueMetrics?repo=acme&repoHost=github.com");
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.details[0].path).toBe("repo");
    expect((await server.api.get("getMergeQueueMetrics?repo=acme/web&repo=x/y&repoHost=github.com")).status).toBe(400);
  });
});
