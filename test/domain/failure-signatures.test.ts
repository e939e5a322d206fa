import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { failureSignature, type FailureKind, normalizeFailure, readFailure } from "../../src/domain/flaky/failures.js";
import { infrastructureFailure, uploadFailure, type UploadFailure } from "../../src/domain/flaky/infrastructure.js";
import { type JUnitCase, parseJUnit } from "../../src/formats/junit.js";
import { projectRoot } from "../../src/paths.js";

// Failure signatures and infrastructure verdicts on real reports of jest (jest-junit), Vitest
// (its junit reporter), pytest (--junitxml), go test (gotestsum), Maven Surefire and RSpec
// (rspec_junit_formatter), each with assertion failures, setup errors and an infrastructure
// outage side by side (test/fixtures/junit/failures/).

const dir = join(projectRoot, "test/fixtures/junit/failures");
const reports = (name: string) => (name.endsWith(".xml") ? [readFileSync(join(dir, name), "utf8")] : readdirSync(join(dir, name)).map((f) => readFileSync(join(dir, name, f), "utf8")));

function casesOf(name: string): JUnitCase[] {
  const cases: JUnitCase[] = [];
  for (const xml of reports(name)) parseJUnit(xml, (c) => cases.push(c));
  return cases;
}

const failureOf = (c: JUnitCase) => readFailure({ message: c.message, type: c.failureType, text: c.failureText, file: c.file, classname: c.classname });
/** The infrastructure verdict on the testcases as one upload (as ingest reads them). */
const verdict = (cases: JUnitCase[]) =>
  infrastructureFailure(
    cases.filter((c) => !c.skipped).length,
    cases.filter((c) => c.failed).map((c) => uploadFailure(c, failureOf(c))),
  );

const A: FailureKind = "assertion";
const E: FailureKind = "error";
const I: FailureKind = "infrastructure";

/** Each report's failed tests and what they are: six assertion failures in three files, setup errors, an outage. */
const REPORTS: [string, Record<string, FailureKind>][] = [
  [
    "jest-junit.xml",
    {
      "Cart totals with tax": A,
      "Cart counts its items": A,
      "discounts applies a percentage": A,
      "discounts never goes below zero": A,
      "shipping is free above 50": A,
      "shipping charges express": A,
      "orders places an order": E,
      "orders cancels an order": E,
      "src/pricing/tax.test.ts": E,
      "repository saves a cart": I,
      "repository loads a cart": I,
    },
  ],
  [
    "vitest.xml",
    {
      "cart > totals with tax": A,
      "cart > snapshot of a line": A,
      "discounts > applies a percentage": A,
      "discounts > never goes below zero": A,
      "shipping > is free above 50": A,
      "shipping > charges express": A,
      "orders > places an order": E,
      "orders > cancels an order": E,
      "sessions > stores a session": I,
      "sessions > expires a session": I,
    },
  ],
  [
    "pytest.xml",
    {
      test_total_with_tax: A,
      test_remove_item: A,
      test_percentage: A,
      test_floor: A,
      test_free_above_50: A,
      test_express: A,
      test_refund: E,
      test_save_cart: I,
      test_load_cart: I,
    },
  ],
  [
    "gotestsum.xml",
    {
      TestTotalWithTax: A,
      TestCount: A,
      TestPercentage: A,
      "TestFloor/fixed_above_price": A,
      TestFreeAbove50: A,
      TestExpress: A,
      TestPlace: E,
      TestMain: E,
      TestSaveCart: I,
      TestLoadCart: I,
    },
  ],
  [
    "surefire",
    {
      totalsWithTax: A,
      countsItems: A,
      appliesAPercentage: A,
      neverBelowZero: A,
      freeAbove50: A,
      chargesExpress: A,
      findsAProduct: E,
      listsCategories: E,
      savesAnOrder: I,
      loadsAnOrder: I,
    },
  ],
  [
    "rspec.xml",
    {
      "Cart#total includes tax": A,
      "Cart#count counts each line": A,
      "Discount applies a percentage": A,
      "Discount never goes below zero": A,
      "Shipping is free above 50": A,
      "Shipping charges express": A,
      "Order places an order": E,
      "Order cancels an order": E,
      "GET /carts/:id returns the cart": I,
      "POST /carts creates a cart": I,
    },
  ],
];

describe.each(REPORTS)("%s", (name, expected) => {
  const cases = casesOf(name);
  const failed = cases.filter((c) => c.failed);

  test("each failure is read as an assertion, another error or an infrastructure failure", () => {
    expect(Object.fromEntries(failed.map((c) => [c.name, failureOf(c).kind]))).toEqual(expected);
    for (const c of failed.filter((c) => expected[c.name] === I)) expect(failureOf(c).pattern).toBe("connection refused");
  });

  test("the six assertion failures in three files have six signatures, each with its expected and received values and its place", () => {
    const assertions = failed.filter((c) => expected[c.name] === A).map(failureOf);
    expect(assertions).toHaveLength(6);
    expect(new Set(assertions.map((f) => f.signature)).size).toBe(6);
    expect(new Set(assertions.map((f) => f.frame)).size).toBe(6);
    for (const f of assertions) {
      expect(f.frame).toMatch(/^[\w.-]+:\d+$/);
      expect(f.summary.length).toBeLessThanOrEqual(200);
    }
    // The compared values are kept: the first file's first failure compares 108 with 107.99 (or 1 with 2 for pytest's count).
    expect(assertions.map((f) => f.what).join("\n")).toMatch(/108|1 == 2/);
  });

  test("the report as one upload is no infrastructure failure: its regressions are evidence", () => {
    expect(verdict(cases)).toBeNull();
    // Nor are the regressions alone, however alike their first lines.
    expect(verdict(cases.filter((c) => !c.failed || expected[c.name] === A))).toBeNull();
  });

  test("the outage alone is an infrastructure failure; the setup errors alone are not", () => {
    expect(verdict(cases.filter((c) => !c.failed || expected[c.name] === I))).toMatch(/known infrastructure failure \(connection refused\)/);
    expect(verdict(cases.filter((c) => !c.failed || expected[c.name] === E))).toBeNull();
  });
});

describe("the issue's reports", () => {
  const jest = (file: string, line: number, expected: number, received: number) => ({
    message: "Error: expect(received).toBe(expected) // Object.is equality",
    text: `Error: expect(received).toBe(expected) // Object.is equality\n\nExpected: ${expected}\nReceived: ${received}\n    at Object.toBe (/home/runner/work/app/app/${file}:${line}:15)\n    at Promise.then.completed (/home/runner/work/app/app/node_modules/jest-circus/build/utils.js:298:28)`,
    file,
  });
  const pytest = (module: string, line: number) => ({
    message: "assert 1 == 2",
    text: `def test_it():\n>       assert 1 == 2\nE       assert 1 == 2\n\n${module}:${line}: AssertionError`,
    classname: module.replace(/\.py$/, "").replace(/\//g, "."),
  });
  const six = <T>(make: (file: string, i: number) => T, files: string[]) => Array.from({ length: 6 }, (_, i) => make(files[i % 3]!, i));

  test("6 jest failures in 3 files, every message starting expect(received).toBe(expected): no infrastructure failure, 6 signatures", () => {
    const reports = six((file, i) => jest(file, 10 + i, i, i + 1), ["src/a.test.ts", "src/b.test.ts", "src/c.test.ts"]);
    const failures = reports.map(readFailure);
    expect(failures.every((f) => f.kind === "assertion")).toBe(true);
    expect(new Set(failures.map((f) => f.signature)).size).toBe(6);
    expect(failures[0]!.summary).toBe("Error: expect(received).toBe(expected) // Object.is equality | Expected: 0 | Received: 1 (at a.test.ts:10)");
    const upload: UploadFailure[] = reports.map((r, i) => ({ ...uploadFailure({ file: r.file, classname: "", name: `t${i}`, parent: "" }, failures[i]!) }));
    expect(infrastructureFailure(6, upload)).toBeNull();
    expect(infrastructureFailure(10, upload)).toBeNull();
    // The same failure in another run (another checkout, another column) keeps its signature.
    const again = readFailure({ ...reports[0]!, text: reports[0]!.text.replace("/home/runner/work/app/app/", "/builds/x/").replace(":10:15", ":10:9") });
    expect(again.signature).toBe(failures[0]!.signature);
  });

  test.each([
    ["jest", "thrown: Exceeded timeout of 5000 ms for a test.", "Error"],
    ["go test", "panic: test timed out after 30s", ""],
    ["JUnit 5", "execution timed out after 1500 ms", "org.junit.jupiter.api.AssertTimeout$TimeoutFailedException"],
    ["pytest on its own server", "requests.exceptions.ReadTimeout: HTTPConnectionPool(host='localhost', port=8042): Read timed out. (read timeout=5)", "requests.exceptions.ReadTimeout"],
  ])("6 tests in 3 files timing out together (%s) ran on a slow runner: their timing, no infrastructure failure; 6 connections refused are one", (_, message, type) => {
    const files = ["a", "b", "c", "a", "b", "c"];
    const timeouts = files.map((f, i) => readFailure({ message, type, text: `${message}\n    at ${f}.test.ts:${10 + i}`, file: `${f}.test.ts`, classname: f }));
    expect(timeouts.every((f) => f.testTimeout && f.kind === "error")).toBe(true);
    expect(
      infrastructureFailure(
        40,
        timeouts.map((f, i) => uploadFailure({ file: `${files[i]}.test.ts`, classname: "", name: `t${i}`, parent: "" }, f)),
      ),
    ).toBeNull();
    // Most of the job's tests timing out is the runner's, still.
    expect(
      infrastructureFailure(
        10,
        timeouts.map((f, i) => uploadFailure({ file: `${files[i]}.test.ts`, classname: "", name: `t${i}`, parent: "" }, f)),
      ),
    ).toMatch(/^6 of 10 tests failed/);
    const refused = files.map((f) => readFailure({ message: "Error: connect ECONNREFUSED 10.0.0.7:5432", type: "Error", text: "", file: `${f}.test.ts`, classname: f }));
    expect(refused.some((f) => f.testTimeout)).toBe(false);
    expect(
      infrastructureFailure(
        40,
        refused.map((f, i) => uploadFailure({ file: `${files[i]}.test.ts`, classname: "", name: `t${i}`, parent: "" }, f)),
      ),
    ).not.toBeNull();
  });

  test("6 pytest failures in 3 modules, all assert 1 == 2: no infrastructure failure; one signature per place", () => {
    const reports = six((module, i) => pytest(module, 10 + i), ["tests/test_a.py", "tests/test_b.py", "tests/test_c.py"]);
    const failures = reports.map(readFailure);
    expect(failures.map((f) => [f.kind, f.type, f.body])).toEqual(Array(6).fill(["assertion", "AssertionError", "assert 1 == 2"]));
    expect(new Set(failures.map((f) => f.signature)).size).toBe(6);
    expect(failures[0]!.frame).toBe("test_a.py:10");
    const upload = reports.map((r, i) => uploadFailure({ file: "", classname: r.classname, name: `test_${i}`, parent: "pytest" }, failures[i]!));
    expect(infrastructureFailure(6, upload)).toBeNull();
    // The same assertion at the same place in two runs is one failure.
    expect(readFailure(pytest("tests/test_a.py", 10)).signature).toBe(failures[0]!.signature);
  });
});

describe("infrastructure failures", () => {
  test.each([
    ["connection refused", "Error: connect ECONNREFUSED 127.0.0.1:5432"],
    ["connection refused", "psycopg2.OperationalError: could not connect to server: Connection refused"],
    ["connection refused", "dial tcp 10.1.0.4:6379: connect: connection refused"],
    ["connection refused", "page.goto: net::ERR_CONNECTION_REFUSED at http://localhost:3000/"],
    ["no space left on device", "Error: ENOSPC: no space left on device, write"],
    ["no space left on device", "OSError: [Errno 28] No space left on device: '/tmp/pytest-of-runner'"],
    ["out of memory", "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"],
    ["out of memory", "java.lang.OutOfMemoryError: Java heap space"],
    ["out of memory", "E   MemoryError"],
    ["out of memory", "container test-runner was OOMKilled"],
    ["DNS resolution failed", "Error: getaddrinfo ENOTFOUND registry.npmjs.org"],
    ["DNS resolution failed", "Error: getaddrinfo EAI_AGAIN db"],
    ["DNS resolution failed", "java.net.UnknownHostException: repo.maven.apache.org"],
    ["network or registry timeout", "Error: connect ETIMEDOUT 104.16.0.35:443"],
    ["network or registry timeout", "Error: ESOCKETTIMEDOUT"],
    ["network or registry timeout", "npm ERR! network request to https://registry.npmjs.org/left-pad failed"],
    ["network or registry timeout", "pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='files.pythonhosted.org', port=443): Read timed out."],
    ["network or registry timeout", "requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='api.test', port=443)"],
    ["network or registry timeout", "dial tcp: lookup proxy.golang.org: i/o timeout"],
    ["runner lost", "The runner has received a shutdown signal. This can happen when the runner service is stopped, or a manually started runner is canceled."],
    ["runner lost", "The self-hosted runner: ci-7 lost communication with the server."],
  ])("%s: %s", (pattern, message) => {
    const failure = readFailure({ message });
    expect([failure.kind, failure.pattern]).toEqual(["infrastructure", pattern]);
    // One such failure is an infrastructure failure, where it is at least half of the upload's failures.
    const one = uploadFailure({ file: "a.test.ts", classname: "", name: "t", parent: "" }, failure);
    expect(infrastructureFailure(100, [one])).toMatch(new RegExp(`^1 of 1 failed tests failed with a known infrastructure failure \\(${pattern}\\)`));
  });

  test("a timeout talking to the test's own server on localhost is the test's, not the network's", () => {
    for (const message of [
      "requests.exceptions.ReadTimeout: HTTPConnectionPool(host='localhost', port=8042): Read timed out. (read timeout=5)",
      "FetchError: request to http://127.0.0.1:3000/api/orders failed, reason: ETIMEDOUT",
    ])
      expect(readFailure({ message }).pattern).toBeNull();
    // The runner's resolver on 127.0.0.53, and npm's own network errors (a registry mirror on localhost), are still the network.
    expect(readFailure({ message: "npm ERR! network request to http://localhost:4873/left-pad failed, reason: ETIMEDOUT" }).pattern).toBe("network or registry timeout");
    expect(readFailure({ message: "dial tcp: lookup proxy.golang.org on 127.0.0.53:53: read udp 127.0.0.1:41234->127.0.0.53:53: i/o timeout" }).pattern).toBe("network or registry timeout");
  });

  test("an assertion failure is never infrastructure, whatever it quotes", () => {
    const rejected = readFailure({
      message: "Error: expect(received).resolves.toBe()",
      text: "Error: expect(received).resolves.toBe()\n\nReceived promise rejected instead of resolved\nRejected to value: [Error: connect ECONNREFUSED 127.0.0.1:5432]\n    at expect (/w/src/db.test.ts:8:9)",
    });
    expect([rejected.kind, rejected.pattern]).toEqual(["assertion", null]);
    const upload = Array.from({ length: 8 }, (_, i) => uploadFailure({ file: `f${i}.ts`, classname: "", name: "t", parent: "" }, rejected));
    expect(infrastructureFailure(10, upload)).toBeNull();
  });

  test("testify's NoError compares nothing: the error it reports decides", () => {
    const text = (error: string) =>
      `=== RUN   TestSave\n    store_test.go:22: \n        \tError Trace:\t/w/store/store_test.go:22\n        \tError:      \tReceived unexpected error:\n        \t            \t${error}\n        \tTest:       \tTestSave\n--- FAIL: TestSave (1.00s)\n`;
    expect(readFailure({ message: "Failed", text: text("dial tcp 127.0.0.1:5432: connect: connection refused"), classname: "github.com/acme/shop/store" })).toMatchObject({
      kind: "infrastructure",
      pattern: "connection refused",
      frame: "store_test.go:22",
    });
    expect(readFailure({ message: "Failed", text: text("sql: no rows in result set"), classname: "github.com/acme/shop/store" }).kind).toBe("error");
    // A comparison is an assertion, whatever it quotes.
    const equal = `    store_test.go:30: \n        \tError Trace:\t/w/store/store_test.go:30\n        \tError:      \tNot equal: \n        \t            \texpected: "connection refused"\n        \t            \tactual  : "ok"\n`;
    expect(readFailure({ message: "Failed", text: equal }).kind).toBe("assertion");
  });

  test("a stack trace in the message attribute is frames, not message", () => {
    const f = readFailure({ message: "TypeError: x is not a function\n    at run (/w/src/a.test.ts:3:9)\n    at next (/w/node_modules/x/index.js:1:1)", file: "src/a.test.ts" });
    expect([f.what, f.frame]).toEqual(["TypeError: x is not a function", "a.test.ts:3"]);
  });

  test("a known infrastructure failure of a test that passed on a retry within the upload is flaky evidence, not an outage", () => {
    const timeout = uploadFailure({ file: "net_test.go", classname: "", name: "TestDial", parent: "" }, readFailure({ message: "Failed", text: "    net_test.go:90: dial tcp: i/o timeout\n" }));
    expect(infrastructureFailure(20, [timeout])).toMatch(/known infrastructure failure \(network or registry timeout\)/);
    expect(infrastructureFailure(20, [{ ...timeout, passedOnRetry: true }])).toBeNull();
  });

  test("known patterns are outweighed by the tests' own failures: half of the failures at least", () => {
    const refused = uploadFailure({ file: "db.test.ts", classname: "", name: "t", parent: "" }, readFailure({ message: "connect ECONNREFUSED 127.0.0.1:5432" }));
    const assertions = Array.from({ length: 3 }, (_, i) => uploadFailure({ file: `f${i}.ts`, classname: "", name: "t", parent: "" }, readFailure({ message: `expected ${i} to be ${i + 1}` })));
    expect(infrastructureFailure(100, [refused, ...assertions])).toBeNull();
    expect(infrastructureFailure(100, [refused, refused, ...assertions.slice(0, 2)])).toMatch(/^2 of 4 failed tests failed with a known infrastructure failure/);
  });

  test("the same error that is no assertion across unrelated tests is one; across related tests, or an assertion, it is not", () => {
    const error = (file: string) =>
      uploadFailure(
        { file, classname: "", name: "t", parent: "" },
        readFailure({ message: "TypeError: Cannot read properties of undefined (reading 'query')", text: `TypeError: Cannot read properties of undefined (reading 'query')\n    at Object.<anonymous> (/w/${file}:3:7)` }),
      );
    const files = (n: number) => Array.from({ length: 6 }, (_, i) => `src/f${i % n}.test.ts`);
    expect(infrastructureFailure(100, files(3).map(error))).toMatch(/^6 tests in 3 files failed with one failure: "TypeError: Cannot read properties of undefined \(reading 'query'\)"/);
    expect(infrastructureFailure(100, files(2).map(error))).toBeNull();
  });

  test("most tests failing counts only failures other than assertions", () => {
    const error = uploadFailure({ file: "a.ts", classname: "", name: "t", parent: "" }, readFailure({ message: "Error: worker exited unexpectedly" }));
    const assertion = uploadFailure({ file: "a.ts", classname: "", name: "t", parent: "" }, readFailure({ message: "AssertionError: expected 1 to equal 2" }));
    expect(infrastructureFailure(10, Array(10).fill(assertion))).toBeNull();
    expect(infrastructureFailure(10, [...Array(5).fill(error), assertion])).toBe("5 of 10 tests failed other than by an assertion (50%; an infrastructure failure at ≥ 50% of at least 10 tests)");
  });

  test("jest-junit's default classnames (the test's own name) are told apart by their suite, one per test file", () => {
    const refused = readFailure({ message: "TypeError: db.query is not a function" });
    const upload = Array.from({ length: 6 }, (_, i) => uploadFailure({ file: "", classname: `orders test ${i}`, name: `orders test ${i}`, parent: "orders" }, refused));
    expect(infrastructureFailure(100, upload)).toBeNull();
    const pytest = Array.from({ length: 6 }, (_, i) => uploadFailure({ file: "", classname: `tests.test_${i % 3}`, name: `test_${i}`, parent: "pytest" }, refused));
    expect(infrastructureFailure(100, pytest)).toMatch(/^6 tests in 3 files/);
  });
});

describe("normalization", () => {
  test("an error's numbers, paths, times and addresses are placeholders; an assertion keeps its values, not its temporary paths", () => {
    expect(readFailure({ message: "Error: listen EADDRINUSE: address already in use :::3000 at 2026-11-26T10:00:00Z" }).what).toBe("Error: listen EADDRINUSE: address already in use :::<n> at <time>");
    const a = readFailure({ message: "AssertionError: expected '/tmp/pytest-of-runner/pytest-12/test_x0/out.txt' to equal 'a' at 0x7f3a2c1b9d10" });
    const b = readFailure({ message: "AssertionError: expected '/tmp/pytest-of-runner/pytest-13/test_x0/out.txt' to equal 'a' at 0x7f00aa00bb00" });
    expect(a.what).toBe("AssertionError: expected '<tmp>' to equal 'a' at <hex>");
    expect(a.signature).toBe(b.signature);
    expect(readFailure({ message: "expected 3 to be 4" }).signature).not.toBe(readFailure({ message: "expected 5 to be 6" }).signature);
  });

  test("a failure with nothing but a one-line message that is no assertion keeps the signature it had", () => {
    for (const message of ["Timeout of 5000ms exceeded", 'relation "users_3" does not exist', "ECONNRESET", "socket hang up"]) {
      expect(readFailure({ message }).signature).toBe(failureSignature(normalizeFailure(message)));
      expect(readFailure({ message }).summary).toBe(normalizeFailure(message));
    }
  });

  test("the frame is the first in the test's own file, not in a library or a helper", () => {
    const f = readFailure({
      message: "TypeError: x is not a function",
      text: "TypeError: x is not a function\n    at helper (/w/src/support/helper.ts:4:3)\n    at run (/w/node_modules/lib/index.js:9:1)\n    at Object.<anonymous> (/w/src/cart.test.ts:12:5)",
      file: "src/cart.test.ts",
    });
    expect(f.frame).toBe("cart.test.ts:12");
    const java = readFailure({
      message: "boom",
      type: "java.lang.IllegalStateException",
      text: "java.lang.IllegalStateException: boom\n\tat com.acme.Helper.run(Helper.java:9)\n\tat com.acme.CartTest.adds(CartTest.java:23)",
      classname: "com.acme.CartTest",
    });
    expect([java.type, java.body, java.frame]).toEqual(["java.lang.IllegalStateException", "boom", "CartTest.java:23"]);
  });
});

describe("failure shapes: what an automatic quarantine covers (issue 25)", () => {
  const java = (type: string, message: string, line = 55) => readFailure({ message, type, text: `${type}: ${message}\n\tat com.acme.core.OrderTest.adds(OrderTest.java:${line})`, classname: "com.acme.core.OrderTest" });

  test("one shape for an assertion comparing other values each time, or at another line of the same file; two signatures", () => {
    const a = java("org.opentest4j.AssertionFailedError", "expected: <12> but was: <840>");
    const b = java("org.opentest4j.AssertionFailedError", "expected: <7> but was: <3>", 61);
    expect(a.signature).not.toBe(b.signature);
    expect(a.shape).toBe(b.shape);
  });

  test("a timeout and an assertion of one test are two shapes; so are two messages", () => {
    const timeout = java("org.junit.jupiter.api.AssertTimeout$TimeoutFailedException", "execution timed out after 1500 ms");
    expect(java("org.junit.jupiter.api.AssertTimeout$TimeoutFailedException", "execution timed out after 1733 ms").shape).toBe(timeout.shape);
    expect(java("org.opentest4j.AssertionFailedError", "expected: <12> but was: <13>").shape).not.toBe(timeout.shape);
    const jest = (message: string) => readFailure({ message, text: `Error: ${message}\n    at Object.<anonymous> (/w/src/cart.test.ts:12:5)`, file: "src/cart.test.ts" });
    expect(jest("thrown: Exceeded timeout of 5000 ms for a test.").shape).not.toBe(jest("expect(received).toBe(expected) // Object.is equality\n\nExpected: 3\nReceived: 4").shape);
    // Strings, booleans and nulls compared are values too: one shape.
    const states = ['"pending"', '"running"', "null", "false"].map((received) => jest(`expect(received).toBe(expected) // Object.is equality\n\nExpected: "done"\nReceived: ${received}`));
    expect(new Set(states.map((f) => f.shape)).size).toBe(1);
    expect(new Set(states.map((f) => f.signature)).size).toBe(4);
  });
});
