import type { Principal } from "../auth/tokens.js";
import type { RepoRef } from "../codehost/code-host.js";
import { invalidArgument, notFound } from "./errors.js";
import { findRepository, repositoryKey } from "./repositories.js";
import type { Services } from "./services.js";

export type PageQuery = { page_size: number; page_token: string };

export type PageInfo = {
  total_rows: number;
  total_pages: number;
  next_page_token: string;
  prev_page_token: string;
  last_page_token: string;
  page_index: number;
};

const MAX_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Checks the organization slug and repository of a flaky-test request. A slug other than the
 * token's organization, or another organization's repository, answers not_found.
 */
async function checkScope(services: Services, principal: Principal, input: { repo: RepoRef; org_url_slug: string }): Promise<void> {
  if (input.org_url_slug.toLowerCase() !== principal.organizationSlug) throw notFound(`organization "${input.org_url_slug}" not found`);
  const existing = await services.db.read(async (tx) => {
    const owned = await findRepository(tx, principal, input.repo);
    const any = owned ?? (await tx.repository.findUnique({ where: { key: repositoryKey(input.repo) }, select: { id: true } }));
    return { owned, any };
  });
  if (existing.any && !existing.owned) throw notFound(`repository ${input.repo.owner}/${input.repo.name} not found`);
}

/** Page tokens are opaque to clients: base64url of {"p": page index}. */
export function encodePageToken(pageIndex: number): string {
  return Buffer.from(JSON.stringify({ p: pageIndex })).toString("base64url");
}

export function decodePageToken(token: string): number {
  if (token === "") return 0;
  try {
    const decoded = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as { p?: unknown };
    if (Number.isSafeInteger(decoded.p) && (decoded.p as number) >= 0) return decoded.p as number;
  } catch {
    // fall through
  }
  throw invalidArgument("page_query.page_token", "is not a page token this server issued");
}

export function emptyPage(): PageInfo {
  return { total_rows: 0, total_pages: 0, next_page_token: "", prev_page_token: "", last_page_token: "", page_index: 0 };
}

export async function listFailingTests(
  services: Services,
  principal: Principal,
  input: { repo: RepoRef; org_url_slug: string; start_time: Date; end_time: Date; page_query: PageQuery },
) {
  if (input.start_time > input.end_time) throw invalidArgument("start_time", "must not be after end_time");
  if (input.end_time.getTime() - input.start_time.getTime() > MAX_WINDOW_MS) {
    throw invalidArgument("end_time", "must be within 7 days of start_time");
  }
  decodePageToken(input.page_query.page_token);
  await checkScope(services, principal, input);
  return { tests: [], page: emptyPage() };
}

export async function listQuarantinedTests(services: Services, principal: Principal, input: { repo: RepoRef; org_url_slug: string; page_query: PageQuery }) {
  decodePageToken(input.page_query.page_token);
  await checkScope(services, principal, input);
  return { quarantined_tests: [], page: emptyPage() };
}

export async function getTestDetails(services: Services, principal: Principal, input: { repo: RepoRef; org_url_slug: string; test_id: string }): Promise<never> {
  await checkScope(services, principal, input);
  throw notFound(`test case ${input.test_id} not found`);
}
