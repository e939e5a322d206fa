import { createHmac, randomUUID } from "node:crypto";
import { request, type IncomingHttpHeaders } from "node:http";
import { BACKENDS } from "../support/backends.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { startTestServer, type TestServer } from "../support/harness.js";
import { githubAppOf } from "../support/webhook-post.js";

const MiB = 1024 * 1024;
/** What the webhook route accepts at most (GitHub sends no more). */
const LIMIT = 25 * MiB;

type Sent = { status: number; headers: IncomingHttpHeaders; text: string; peakGrowth: { rss: number; buffers: number } };

/**
 * POSTs a webhook delivery whose body is `parts` (sent in order, waiting for the socket to take
 * each), with a Content-Length when `declared` is given, else chunked. Stops sending once the
 * server answers. Notes how far this process's resident memory and the memory of its buffers
 * grew while sending: the server runs in it. (Resident memory, once grown, is not returned, so
 * only a fresh process sees all of its growth; buffers' memory is freed when collected.)
 */
function deliver(server: TestServer, headers: Record<string, string>, parts: Iterable<Buffer>, declared?: number): Promise<Sent> {
  const before = process.memoryUsage();
  const peak = { rss: 0, buffers: 0 };
  const measure = () => {
    const now = process.memoryUsage();
    peak.rss = Math.max(peak.rss, now.rss - before.rss);
    peak.buffers = Math.max(peak.buffers, now.arrayBuffers - before.arrayBuffers);
  };
  const sampler = setInterval(measure, 5);
  return new Promise((resolve, reject) => {
    const req = request(`${server.url}/api/github/webhooks`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "ping",
        "x-github-delivery": randomUUID(),
        ...headers,
        ...(declared === undefined ? { "transfer-encoding": "chunked" } : { "content-length": String(declared) }),
      },
    });
    let answered = false;
    req.on("response", (res) => {
      answered = true;
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => {
        clearInterval(sampler);
        measure();
        resolve({ status: res.statusCode!, headers: res.headers, text, peakGrowth: peak });
        req.destroy();
      });
    });
    // The server closes the connection after refusing a body it has not read.
    req.on("error", (error) => {
      if (answered) return;
      clearInterval(sampler);
      reject(error);
    });
    const iterator = parts[Symbol.iterator]();
    const pump = () => {
      for (;;) {
        if (answered || req.destroyed) return;
        measure();
        const next = iterator.next();
        if (next.done) return void (declared === undefined || declared === sentBytes ? req.end() : undefined);
        sentBytes += next.value.length;
        if (!req.write(next.value)) return void req.once("drain", pump);
      }
    };
    let sentBytes = 0;
    pump();
  });
}

/** `count` pieces of one mebibyte of spaces (the same buffer, so the sender holds one). */
function* mebibytes(count: number): Generator<Buffer> {
  const piece = Buffer.alloc(MiB, 0x20);
  for (let i = 0; i < count; i++) yield piece;
}

/** A `ping` payload padded to about `size` bytes, in pieces of a mebibyte. */
function paddedPing(size: number): Buffer[] {
  const head = Buffer.from('{"zen": "Keep it logically awesome.", "hook_id": 1, "padding": "');
  const tail = Buffer.from('"}');
  const body = Buffer.concat([head, Buffer.alloc(size - head.length - tail.length, 0x61), tail]);
  const parts: Buffer[] = [];
  for (let at = 0; at < body.length; at += MiB) parts.push(body.subarray(at, at + MiB));
  return parts;
}

const signatureOf = (parts: Buffer[], secret: string) => `sha256=${parts.reduce((hmac, part) => hmac.update(part), createHmac("sha256", secret)).digest("hex")}`;
const sizeOf = (parts: Buffer[]) => parts.reduce((sum, part) => sum + part.length, 0);

describe.each(BACKENDS)("the webhook route as a GitHub App, on $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  beforeAll(async () => {
    gh = await new GitHubSimulator().start();
    server = await startTestServer(backend, { githubApp: githubAppOf(gh) });
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("a body declared over 25 MiB is refused with 413 before it is sent, and the connection closed", async () => {
    // Only the first mebibyte is ever sent: the answer must not wait for the rest.
    const sent = await deliver(server, { "x-hub-signature-256": "sha256=00" }, mebibytes(1), 600 * MiB);
    expect(sent.status).toBe(413);
    expect(sent.headers.connection).toBe("close");
    expect(JSON.parse(sent.text).error).toMatch(/exceeds the limit of 25 MiB/);
  }, 15_000);

  test("a chunked body is cut off with 413 once it passes 25 MiB, and the server never holds much more", async () => {
    const sent = await deliver(server, { "x-hub-signature-256": "sha256=00" }, mebibytes(200));
    expect(sent.status).toBe(413);
    expect(sent.headers.connection).toBe("close");
    // Loosely: the 25 MiB read before the cut and what the sockets buffer, not the 200 MiB offered.
    expect(sent.peakGrowth.rss).toBeLessThan(100 * MiB);
    expect(sent.peakGrowth.buffers).toBeLessThan(100 * MiB);
  }, 30_000);

  test("a large body streamed in chunks under a wrong signature is refused", async () => {
    const parts = paddedPing(LIMIT - 1024);
    const forged = await deliver(server, { "x-hub-signature-256": signatureOf(parts, "not-the-secret") }, parts);
    expect(forged.status).toBe(400);
    expect(JSON.parse(forged.text).error).toMatch(/signature does not match/);
    const declared = await deliver(server, { "x-hub-signature-256": signatureOf(parts, "not-the-secret") }, parts, sizeOf(parts));
    expect(declared.status).toBe(400);
  }, 30_000);

  test("a large delivery signed correctly is received, streamed in chunks or with its length", async () => {
    const parts = paddedPing(LIMIT);
    const signature = signatureOf(parts, gh.webhookSecret);
    // Taken: 200 once recorded, or 202 when recording 25 MiB outlasts GitHub's wait (a loaded machine); never refused.
    const taken = [
      { status: 200, text: "ok\n" },
      { status: 202, text: "still processing\n" },
    ];
    for (const length of [undefined, sizeOf(parts)]) {
      const { status, text } = await deliver(server, { "x-hub-signature-256": signature }, parts, length);
      expect(taken).toContainEqual({ status, text });
    }
  }, 30_000);

  test("a delivery without its headers, or not JSON, is refused as @octokit/webhooks refuses it", async () => {
    const parts = [Buffer.from("{}")];
    const unsigned = await deliver(server, {}, parts, 2);
    expect([unsigned.status, JSON.parse(unsigned.text).error]).toEqual([400, "Required headers missing: x-hub-signature-256"]);
    const text = await deliver(server, { "content-type": "text/plain", "x-hub-signature-256": signatureOf(parts, gh.webhookSecret) }, parts, 2);
    expect(text.status).toBe(415);
    const notJson = [Buffer.from("{not json")];
    const malformed = await deliver(server, { "x-hub-signature-256": signatureOf(notJson, gh.webhookSecret) }, notJson, 9);
    expect(malformed.status).toBe(400);
    expect((await fetch(`${server.url}/api/github/webhooks`)).status).toBe(404);
  });
});

describe.each(BACKENDS)("the webhook route in the sandbox, on $name", (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
  });
  afterAll(() => server?.close());

  test("is bounded too: 413 for a body declared or grown over 25 MiB, 400 for any signature", async () => {
    expect((await deliver(server, { "x-hub-signature-256": "sha256=00" }, mebibytes(1), 600 * MiB)).status).toBe(413);
    const grown = await deliver(server, { "x-hub-signature-256": "sha256=00" }, mebibytes(200));
    expect(grown.status).toBe(413);
    expect(grown.peakGrowth.rss).toBeLessThan(100 * MiB);
    expect(grown.peakGrowth.buffers).toBeLessThan(100 * MiB);
    const parts = [Buffer.from("{}")];
    expect((await deliver(server, { "x-hub-signature-256": signatureOf(parts, "guess") }, parts, 2)).status).toBe(400);
  }, 30_000);
});
