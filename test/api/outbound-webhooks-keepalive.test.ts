import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

/**
 * A receiver closes an idle kept-alive connection (its keep-alive timeout, often 5 s) just as
 * the dispatcher reuses it for the next message: the request never reaches it. The dispatcher
 * sends it again at once on a new connection, rather than recording a failed attempt and
 * waiting out a backoff (a CI run once saw a redelivery miss its receiver this way).
 */
describe.each(BACKENDS.slice(0, 1))("outbound webhooks on a reused connection the receiver closed, on $name", (backend) => {
  let server: TestServer;
  let receiver: http.Server;
  const bodies: string[] = [];
  const requestsOn = new Map<Socket, number>();
  let resets = 0;

  beforeAll(async () => {
    server = await startTestServer(backend, { webhooks: { allowPrivate: true } });
    // The second request on any connection finds it closed (as if the receiver's idle timeout
    // had struck as it arrived); the first on a connection is answered, and the connection kept.
    receiver = http.createServer((request, response) => {
      const n = (requestsOn.get(request.socket) ?? 0) + 1;
      requestsOn.set(request.socket, n);
      if (n >= 2) {
        resets++;
        request.socket.destroy();
        return;
      }
      let body = "";
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => {
        bodies.push(body);
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  });
  afterAll(async () => {
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
    await server?.close();
  });

  test("the message goes again at once on a new connection, delivered in one attempt", async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const { endpoint } = await server.api.ok("webhooks/create-endpoint", { url, events: ["pull_request.submitted"] });
    await server.api.ok("createQueue", queueOf("kept-alive"));
    await server.api.ok("submitPullRequest", prOf(1, "kept-alive"));
    await server.greenline.worker.deliverWebhooks();
    expect(bodies).toHaveLength(1);

    await server.api.ok("submitPullRequest", prOf(2, "kept-alive"));
    await server.greenline.worker.deliverWebhooks();
    expect(resets).toBe(1);
    expect(bodies.map((b) => JSON.parse(b).data.pullRequest.number)).toEqual([1, 2]);
    const { deliveries } = await server.api.ok("webhooks/list-deliveries", { id: endpoint.id, pageSize: 10 });
    expect(deliveries.map((d: { status: string; attempts: number }) => [d.status, d.attempts])).toEqual([
      ["delivered", 1],
      ["delivered", 1],
    ]);
  });
});
