import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";
import { WebhookReceiver } from "../support/webhook-receiver.js";

const run = promisify(execFile);
const root = join(import.meta.dirname, "../..");

describe.each(BACKENDS.slice(0, 1))("greenline webhooks (the CLI) on $name", (backend) => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    server = await startTestServer(backend, { webhooks: { allowPrivate: true } });
    receiver = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    await receiver?.close();
    await server?.close();
  });

  /** Runs the real `greenline` CLI in its own process, against the test server. */
  async function greenline(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], {
        cwd: root,
        env: { ...process.env, GREENLINE_URL: server.url, GREENLINE_API_TOKEN: server.api.token },
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  test("create, list, deliveries, redeliver, rotate, disable, delete", async () => {
    const created = await greenline("webhooks", "create", "--endpoint-url", receiver.url, "--events", "pull_request.submitted,pull_request.merged", "--description", "cli");
    expect(created.code).toBe(0);
    const [line, secret] = created.stdout.trim().split("\n");
    const id = /endpoint (\S+)\./.exec(line!)![1]!;
    expect(secret).toMatch(/^whsec_/);
    receiver.secrets.push(secret!);

    expect((await greenline("webhooks", "list")).stdout.trim()).toBe(`${id}\t${receiver.url}\tpull_request.submitted,pull_request.merged\tenabled`);

    await server.api.ok("createQueue", queueOf("cli"));
    await server.api.ok("submitPullRequest", prOf(1, "cli"));
    await server.greenline.worker.deliverWebhooks();
    expect(receiver.received.map((m) => m.type)).toEqual(["pull_request.submitted"]);

    const deliveries = await greenline("webhooks", "deliveries", id);
    expect(deliveries.code).toBe(0);
    const [deliveryId, type, status, attempts, last] = deliveries.stdout.trim().split("\t");
    expect([type, status, attempts, last]).toEqual(["pull_request.submitted", "delivered", "1 attempt(s)", "last 204"]);
    expect((await greenline("webhooks", "redeliver", id, deliveryId!)).code).toBe(0);
    await server.greenline.worker.deliverWebhooks();
    expect(receiver.received.map((m) => m.webhookId)).toEqual([receiver.received[0]!.webhookId, receiver.received[0]!.webhookId]);

    const rotated = await greenline("webhooks", "update", id, "--rotate-secret", "--disable");
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toContain("disabled: disabled by a user");
    expect(rotated.stdout.trim().split("\n").at(-1)).toMatch(/^whsec_/);

    expect((await greenline("webhooks", "delete", id)).stdout.trim()).toBe(`deleted ${id}`);
    expect((await greenline("webhooks", "list")).stdout.trim()).toBe("no webhook endpoints");
  });

  test("the API's refusal is printed with its field (exit 1); a missing argument is a usage error (exit 2)", async () => {
    const refused = await greenline("webhooks", "create", "--endpoint-url", receiver.url, "--events", "nope");
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain("Greenline refused (400): events.0:");
    const usage = await greenline("webhooks", "delete");
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("webhooks delete needs the endpoint's id");
    expect(usage.stderr).toContain("Usage: greenline webhooks delete <id>");
  });
});
