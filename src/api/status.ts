import { z } from "zod";
import { operation } from "./shared/operation.js";

export const ZStatusQuery = z.object({});
export const ZStatusResponse = z.strictObject({ status: z.literal("ok") });

export const STATUS_OPERATION = operation({
  operationId: "getStatus",
  method: "get",
  path: "/status",
  summary: "Whether the service is up and the x-api-token is valid (clients check it before they start)",
  request: ZStatusQuery,
  response: ZStatusResponse,
  handle: async () => ({ status: "ok" }),
});
