import { CliUsageError, GreenlineRefusal, getFromGreenline, greenlineToken, greenlineUrl, postToGreenline } from "./greenline-client.js";

/**
 * `greenline webhooks …`: an organization's outbound webhook endpoints, through the API of a
 * running Greenline (GREENLINE_URL, GREENLINE_API_TOKEN); it never needs the database.
 */

export type WebhookOptions = {
  url?: string | undefined;
  token?: string | undefined;
  "endpoint-url"?: string | undefined;
  events?: string | undefined;
  description?: string | undefined;
  secret?: string | undefined;
  enable?: boolean | undefined;
  disable?: boolean | undefined;
  "rotate-secret"?: boolean | undefined;
  limit?: string | undefined;
  "page-token"?: string | undefined;
};

type Out = (line: string) => void;

type Endpoint = { id: string; url: string; events: string[]; enabled: boolean; disabledReason: string | null; failingSince: string | null; previousSecretExpiresAt: string | null };
type Delivery = { id: string; webhookId: string; eventType: string; status: string; attempts: number; lastStatus: number | null; lastError: string | null };

/** `body` null: a GET (list-endpoints). The connection is read here, after the command's own arguments were checked. */
function call<T>(options: WebhookOptions, operation: string, body: object | null): Promise<T> {
  const url = greenlineUrl(options.url, process.env.GREENLINE_URL);
  const token = greenlineToken(options.token, process.env.GREENLINE_API_TOKEN);
  const path = `webhooks/${operation}`;
  return body === null ? getFromGreenline<T>(url, token, path) : postToGreenline<T>(url, token, path, body);
}

function eventsOf(options: WebhookOptions): string[] | undefined {
  if (options.events === undefined) return undefined;
  return options.events
    .split(",")
    .map((e) => e.trim())
    .filter(Boolean);
}

function describeEndpoint(e: Endpoint): string {
  const state = e.enabled ? (e.failingSince ? `enabled, failing since ${e.failingSince}` : "enabled") : `disabled: ${e.disabledReason ?? "by a user"}`;
  return `${e.id}\t${e.url}\t${e.events.join(",")}\t${state}`;
}

/** Runs `greenline webhooks <command>`; answers the exit code. */
export async function webhookCommand(command: string | undefined, args: string[], options: WebhookOptions, out: Out): Promise<number> {
  try {
    return await run(command, args, options, out);
  } catch (error) {
    // The API's refusal, in its own words, on stdout: exit 1.
    if (error instanceof GreenlineRefusal) {
      out(`greenline: Greenline refused (${error.status}): ${error.reason}`);
      return 1;
    }
    throw error;
  }
}

async function run(command: string | undefined, args: string[], options: WebhookOptions, out: Out): Promise<number> {
  const id = () => {
    if (!args[0]) throw new CliUsageError(`webhooks ${command} needs the endpoint's id (see webhooks list)`);
    return args[0];
  };
  switch (command) {
    case "create": {
      const url = options["endpoint-url"];
      const events = eventsOf(options);
      if (!url) throw new CliUsageError("--endpoint-url is required");
      if (!events || events.length === 0) throw new CliUsageError('--events is required: event types separated by commas, or "*"');
      const created = await call<{ endpoint: Endpoint; secret: string }>(options, "create-endpoint", {
        url,
        events,
        ...(options.description !== undefined ? { description: options.description } : {}),
        ...(options.secret !== undefined ? { secret: options.secret } : {}),
      });
      out(`Created webhook endpoint ${created.endpoint.id}. Its signing secret (store it now; it is not shown again):`);
      out(created.secret);
      return 0;
    }
    case "list": {
      const { endpoints } = await call<{ endpoints: Endpoint[] }>(options, "list-endpoints", null);
      for (const e of endpoints) out(describeEndpoint(e));
      if (endpoints.length === 0) out("no webhook endpoints");
      return 0;
    }
    case "update": {
      if (options.enable && options.disable) throw new CliUsageError("--enable and --disable exclude each other");
      const body = {
        id: id(),
        ...(options["endpoint-url"] !== undefined ? { url: options["endpoint-url"] } : {}),
        ...(options.events !== undefined ? { events: eventsOf(options) } : {}),
        ...(options.description !== undefined ? { description: options.description } : {}),
        ...(options.enable ? { enabled: true } : options.disable ? { enabled: false } : {}),
        ...(options["rotate-secret"] ? { rotateSecret: true } : {}),
      };
      const updated = await call<{ endpoint: Endpoint; secret?: string }>(options, "update-endpoint", body);
      out(describeEndpoint(updated.endpoint));
      if (updated.secret) {
        out(`New signing secret (the previous one signs too until ${updated.endpoint.previousSecretExpiresAt}):`);
        out(updated.secret);
      }
      return 0;
    }
    case "delete": {
      await call(options, "delete-endpoint", { id: id() });
      out(`deleted ${args[0]}`);
      return 0;
    }
    case "deliveries": {
      const limit = options.limit === undefined ? undefined : Number(options.limit);
      if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 500)) throw new CliUsageError("--limit must be a number from 1 to 500");
      const page = await call<{ deliveries: Delivery[]; nextPageToken: string }>(options, "list-deliveries", {
        id: id(),
        ...(limit ? { pageSize: limit } : {}),
        ...(options["page-token"] ? { pageToken: options["page-token"] } : {}),
      });
      for (const d of page.deliveries) {
        const last = d.lastStatus !== null ? `last ${d.lastStatus}` : d.lastError ? "no answer" : "not tried";
        out(`${d.id}\t${d.eventType}\t${d.status}\t${d.attempts} attempt(s)\t${last}${d.lastError ? `\t${d.lastError}` : ""}`);
      }
      if (page.deliveries.length === 0) out("no deliveries");
      if (page.nextPageToken) out(`more: --page-token ${page.nextPageToken}`);
      return 0;
    }
    case "redeliver": {
      const deliveryId = args[1];
      if (!deliveryId) throw new CliUsageError("webhooks redeliver needs the endpoint's id and the delivery's id (see webhooks deliveries)");
      const { delivery } = await call<{ delivery: Delivery }>(options, "redeliver", { id: id(), deliveryId });
      out(`redelivering ${delivery.webhookId} as ${delivery.id}`);
      return 0;
    }
    default:
      throw new CliUsageError(`unknown command: webhooks ${command ?? ""}`);
  }
}
