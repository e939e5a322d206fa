import { Agent, request, type IncomingHttpHeaders } from "node:http";
import { connect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { BACKENDS } from "../support/backends.js";
import { queueOf, startTestServer, type TestServer } from "../support/harness.js";

type Answer = { status: number; headers: IncomingHttpHeaders; text: string; reusedSocket: boolean };

/** One request through `agent`; `body` is sent whole (a refusal may come before all of it is read). */
function send(server: TestServer, agent: Agent, path: string, headers: Record<string, string>, body: Buffer | string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${server.url}${path}`, { method: "POST", agent, headers: { "x-api-token": server.api.token, "content-length": String(Buffer.byteLength(body)), ...headers } });
    let answered = false;
    req.on("response", (res) => {
      answered = true;
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, text, reusedSocket: req.reusedSocket }));
    });
    // The server may close its side once it has answered, while the rest of a refused body is on its way.
    req.on("error", (error) => (answered ? undefined : reject(error)));
    req.end(body);
  });
}

describe.each(BACKENDS)("connections on $name", (backend) => {
  const IDLE_MS = 1000;
  let server: TestServer;
  let agent: Agent;
  beforeAll(async () => {
    server = await startTestServer(backend, { httpTimeouts: { idleMs: IDLE_MS } });
    await server.api.ok("createQueue", queueOf());
  });
  beforeEach(() => {
    agent = new Agent({ keepAlive: true, maxSockets: 1 });
  });
  afterEach(() => agent.destroy());
  afterAll(() => server?.close());

  const json = { "content-type": "application/json" };
  const valid = JSON.stringify(queueOf());

  test.each([
    ["415, a body that is not JSON", { "content-type": "text/plain" }, Buffer.from(valid)],
    ["413, a body over the limit", json, Buffer.alloc(21 * 1024 * 1024, 0x20)],
  ])("a refusal (%s) says Connection: close, and the client's next request goes out on a new connection", async (_what, headers, body) => {
    const refused = await send(server, agent, "/v1/getQueue", headers, body);
    expect([refused.status, refused.headers.connection]).toEqual([expect.any(Number), "close"]);
    expect(refused.status).toBeGreaterThanOrEqual(413);
    const next = await send(server, agent, "/v1/getQueue", json, valid);
    expect(next.status).toBe(200);
    expect(next.reusedSocket).toBe(false);
  });

  test("a request whose headers pass the limit (a 70 KB header) is answered 431, not reset, also on a kept-alive connection", async () => {
    for (let i = 0; i < 3; i++) {
      // The connection has answered a request already (Node's own handler then writes nothing and destroys the socket).
      expect((await send(server, agent, "/v1/getQueue", json, valid)).status).toBe(200);
      const refused = await send(server, agent, "/v1/getQueue", { ...json, "x-padding": "a".repeat(70 * 1024) }, valid);
      expect([refused.status, refused.headers.connection]).toEqual([431, "close"]);
      expect(JSON.parse(refused.text)).toEqual({ error: { code: "invalid_argument", message: expect.stringContaining("16 KB"), details: [] } });
    }
    expect((await send(server, agent, "/v1/getQueue", json, valid)).status).toBe(200);
  });

  test("an answered request keeps its connection for the next one", async () => {
    expect((await send(server, agent, "/v1/getQueue", json, valid)).headers.connection).toBe("keep-alive");
    expect((await send(server, agent, "/v1/getQueue", json, valid)).reusedSocket).toBe(true);
  });

  test(
    "a connection that never sends a byte is closed by the server",
    async () => {
      const { hostname, port } = new URL(server.url);
      const socket = connect(Number(port), hostname);
      socket.on("error", () => {});
      // The test's own timeout is the bound: without an idle timeout the connection stays open.
      await new Promise((resolve) => socket.on("close", resolve));
      expect(socket.destroyed).toBe(true);
    },
    5 * IDLE_MS,
  );

  test("an upload that keeps sending is not cut however long it takes in all", async () => {
    const body = Buffer.from(valid);
    const pieces = 8;
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${server.url}/v1/getQueue`, { method: "POST", agent, headers: { ...json, "x-api-token": server.api.token, "content-length": String(body.length) } });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on("error", reject);
      void (async () => {
        const size = Math.ceil(body.length / pieces);
        for (let at = 0; at < body.length; at += size) {
          req.write(body.subarray(at, at + size));
          await sleep(IDLE_MS / 4);
        }
        req.end();
      })();
    });
    expect(status).toBe(200);
  });
});
