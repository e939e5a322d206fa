import { z } from "zod";
import { getAuditLog } from "../../app/audit.js";
import { AUDIT_ACTIONS, AUDIT_CHANNELS } from "../../domain/audit.js";
import { type Operation, operation } from "../shared/operation.js";
import { ZPageInfo, ZPageQuery, ZRepo } from "../shared/schemas.js";
import { ZActor } from "../queues/queue-schemas.js";

/** The organization's audit log (docs/audit.md). */

export const ZGetAuditLogRequest = z.object({
  page_query: ZPageQuery.describe("page_size 1–100, page_token from an earlier answer's page (empty for the first)"),
  action: z.enum(AUDIT_ACTIONS).optional().describe("only entries of this action"),
  repo: ZRepo.optional().describe("only entries about this repository"),
});

export const ZAuditEntry = z.strictObject({
  id: z.string(),
  at: z.iso.datetime(),
  actor: ZActor,
  channel: z.enum(AUDIT_CHANNELS).describe("the way in: api (an API token), comment (a /greenline command), dashboard, cli (the service's own CLI)"),
  action: z.enum(AUDIT_ACTIONS),
  repository: z.string().nullable().describe("host/owner/name, when the action is about a repository"),
  branch: z.string().nullable().describe("the queue's branch, when the action is about a queue"),
  reason: z.string().nullable().describe("why, when the action takes one (an emergency, a freeze, a quarantine override)"),
  details: z.record(z.string(), z.unknown()).describe("what changed (never a secret), and the command or operation used"),
});

export const ZGetAuditLogResponse = z.strictObject({ entries: z.array(ZAuditEntry).describe("newest first"), page: ZPageInfo });

export const AUDIT_OPERATIONS: Operation[] = [
  operation({
    operationId: "getAuditLog",
    method: "post",
    path: "/getAuditLog",
    summary: "The organization's audit log: every operator action (who, when, what, why, through which way in), newest first, paged like the flaky-test lists",
    request: ZGetAuditLogRequest,
    response: ZGetAuditLogResponse,
    handle: ({ services, principal }, input) => getAuditLog(services, principal, input),
  }),
];
