import { CliUsageError } from "./greenline-client.js";
import { Context, type QueueOptions } from "./queue-commands.js";

/** `greenline audit`: the organization's audit log (docs/audit.md). */

export type AuditOptions = Pick<QueueOptions, "url" | "token" | "json" | "host"> & { repo?: string | undefined; action?: string | undefined; limit?: string | undefined; "page-token"?: string | undefined };

type Out = (line: string) => void;
type Entry = { at: string; actor: { kind: string; name: string }; channel: string; action: string; repository: string | null; branch: string | null; reason: string | null };
type Page = { entries: Entry[]; page: { next_page_token: string; total_rows: number } };

export async function audit(options: AuditOptions, out: Out): Promise<number> {
  const ctx = new Context({ url: options.url, token: options.token });
  const size = options.limit === undefined ? 50 : Number(options.limit);
  if (!Number.isInteger(size) || size < 1 || size > 100) throw new CliUsageError(`--limit must be a whole number from 1 to 100 (got ${options.limit})`);
  let repo: { host: string; owner: string; name: string } | undefined;
  if (options.repo !== undefined) {
    const [owner, name, ...rest] = options.repo.split("/");
    if (!owner || !name || rest.length > 0) throw new CliUsageError(`--repo must be owner/name (got ${options.repo})`);
    repo = { host: options.host ?? "github.com", owner, name };
  }
  const answer = await ctx.post<Page>("getAuditLog", { page_query: { page_size: size, page_token: options["page-token"] ?? "" }, ...(options.action ? { action: options.action } : {}), ...(repo ? { repo } : {}) });
  if (options.json) {
    out(JSON.stringify(answer, null, 2));
    return 0;
  }
  if (answer.entries.length === 0) out("no entries");
  for (const e of answer.entries) {
    const where = e.repository ? ` ${e.repository}${e.branch ? ` ${e.branch}` : ""}` : "";
    out(`${e.at.slice(0, 19).replace("T", " ")}Z  ${e.action}${where}  by ${e.actor.kind} ${e.actor.name} (${e.channel})${e.reason ? `: ${e.reason}` : ""}`);
  }
  if (answer.page.next_page_token) out(`more: --page-token ${answer.page.next_page_token}`);
  return 0;
}
