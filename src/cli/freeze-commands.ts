import { CliUsageError } from "./greenline-client.js";
import { Context, type QueueOptions, queueName } from "./queue-commands.js";

/** `greenline queue freeze|unfreeze|freezes` (docs/freezes.md). */

export type FreezeOptions = QueueOptions & {
  reason?: string | undefined;
  from?: string | undefined;
  until?: string | undefined;
  days?: string | undefined;
  "time-zone"?: string | undefined;
  "no-testing"?: boolean | undefined;
  "freeze-id"?: string | undefined;
};

type Out = (line: string) => void;
type FreezeStatus = { frozen: boolean; since: string | null; until: string | null; testing: boolean; reasons: string[]; nextChangeAt: string | null };
type Freeze = {
  id: string;
  reason: string;
  testing: boolean;
  kind: "now" | "once" | "weekly";
  from: string | null;
  until: string | null;
  weekly: { timeZone: string; days: string[]; from: string; until: string } | null;
  holdingNow: boolean;
  nextStart: string | null;
};

const DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/** `mon,wed-fri` → mon, wed, thu, fri (ranges wrap: `fri-mon`). */
export function daysOf(text: string): string[] {
  const out: string[] = [];
  for (const part of text
    .toLowerCase()
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [a, b] = part.split("-").map((d) => d.trim().slice(0, 3)) as [string, string | undefined];
    const from = DAYS.indexOf(a);
    const to = b === undefined ? from : DAYS.indexOf(b);
    if (from < 0 || to < 0) throw new CliUsageError(`--days takes mon, tue, wed, thu, fri, sat, sun, lists and ranges (mon-fri), not ${JSON.stringify(part)}`);
    for (let i = from; ; i = (i + 1) % 7) {
      if (!out.includes(DAYS[i]!)) out.push(DAYS[i]!);
      if (i === to) break;
    }
  }
  if (out.length === 0) throw new CliUsageError("--days needs at least one day");
  return out;
}

const when = (iso: string | null, open = "it is unfrozen") => (iso === null ? open : `${iso.slice(0, 16).replace("T", " ")} UTC`);

function statusLine(status: FreezeStatus): string {
  if (status.frozen) return `frozen until ${when(status.until)} (${status.reasons.join("; ")}); ${status.testing ? "pull requests are tested and merge once it ends" : "nothing starts testing"}; only hotfixes merge`;
  return status.nextChangeAt ? `not frozen; the next freeze starts ${when(status.nextChangeAt)}` : "not frozen";
}

function freezeLine(f: Freeze): string {
  const window =
    f.kind === "weekly" && f.weekly
      ? `every ${f.weekly.days.join(", ")} ${f.weekly.from}–${f.weekly.until} ${f.weekly.timeZone}`
      : f.kind === "once"
        ? `from ${when(f.from)} until ${when(f.until)}`
        : `since ${when(f.from)} until ${when(f.until)}`;
  const state = f.holdingNow ? "holding now" : f.nextStart ? `next ${when(f.nextStart)}` : "";
  return `  ${f.id}  ${window}${state ? ` (${state})` : ""}${f.testing ? "" : ", testing held"}: ${f.reason}`;
}

export async function queueFreeze(options: FreezeOptions, out: Out): Promise<number> {
  const ctx = new Context(options);
  const address = ctx.queue();
  if (options.reason === undefined) throw new CliUsageError('--reason is required: why the queue is frozen (--reason "release 4.2")');
  const body: Record<string, unknown> = { ...address, reason: options.reason, ...(options["no-testing"] ? { testing: false } : {}) };
  if (options.days !== undefined) {
    if (options.from === undefined || options.until === undefined) throw new CliUsageError("--days needs --from and --until (HH:MM local times)");
    body.weekly = { timeZone: options["time-zone"] ?? "UTC", days: daysOf(options.days), from: options.from, until: options.until };
  } else {
    if (options["time-zone"] !== undefined) throw new CliUsageError("--time-zone goes with --days (a weekly window)");
    if (options.from !== undefined) body.from = options.from;
    if (options.until !== undefined) body.until = options.until;
  }
  const answer = await ctx.post<{ freeze: Freeze; status: FreezeStatus }>("freezeQueue", body);
  if (options.json) {
    out(JSON.stringify(answer, null, 2));
    return 0;
  }
  out(`greenline: added freeze ${answer.freeze.id} to the ${queueName(address)}`);
  out(`  ${statusLine(answer.status)}`);
  return 0;
}

export async function queueUnfreeze(options: FreezeOptions, out: Out): Promise<number> {
  const ctx = new Context(options);
  const address = ctx.queue();
  const answer = await ctx.post<{ ended: Freeze[]; status: FreezeStatus }>("unfreezeQueue", { ...address, ...(options["freeze-id"] !== undefined ? { freezeId: options["freeze-id"] } : {}) });
  if (options.json) {
    out(JSON.stringify(answer, null, 2));
    return 0;
  }
  out(answer.ended.length === 0 ? `greenline: the ${queueName(address)} was not frozen` : `greenline: ended ${answer.ended.map((f) => `"${f.reason}"`).join(", ")} on the ${queueName(address)}`);
  out(`  ${statusLine(answer.status)}`);
  return 0;
}

export async function queueFreezes(options: FreezeOptions, out: Out): Promise<number> {
  const ctx = new Context(options);
  const address = ctx.queue();
  const answer = await ctx.post<{ status: FreezeStatus; freezes: Freeze[] }>("listQueueFreezes", address);
  if (options.json) {
    out(JSON.stringify(answer, null, 2));
    return 0;
  }
  out(`The ${queueName(address)}: ${statusLine(answer.status)}`);
  out(answer.freezes.length === 0 ? "  no freezes" : `  ${answer.freezes.length} freeze(s):`);
  for (const f of answer.freezes) out(freezeLine(f));
  return 0;
}
