import type { z } from "zod";
import type { Principal } from "../../auth/tokens.js";
import type { Services } from "../../app/services.js";
import type { BundleUrls } from "../../flaky/bundle-uploads.js";
import type { ForkedRunUpload } from "../../queue/forked-runs.js";

/** What each area's operations are made of; the table of them all is ../operations.ts. */

export type OperationContext = {
  services: Services;
  principal: Principal;
  /** The service's public address (GREENLINE_PUBLIC_URL, else the request's), for URLs answered. */
  origin: string;
  bundleUrls: BundleUrls;
  /**
   * Told, in its users' words, when an operation succeeded without doing what was asked (a
   * restart of a PR that never started testing). The API answers as usual; the dashboard shows it.
   */
  explain?: (sentence: string) => void;
};

/** A response that is not JSON (the metrics text). */
export type RawResponse = { raw: true; contentType: string; body: string };

export type Operation<S extends z.ZodType = z.ZodType> = {
  operationId: string;
  method: "post" | "get";
  /** Path below /v1. */
  path: string;
  summary: string;
  /** Validates the JSON body (POST) or the query string (GET). */
  request: S;
  response: z.ZodType;
  responseContentType?: string;
  handle(context: OperationContext, input: z.output<S>): Promise<object | RawResponse>;
  /**
   * Present when a fork PR's workflow run may stand in for the token (x-forked-workflow-run-id):
   * what the request says the run is for, checked by queue/forked-runs.ts.
   */
  forkedRun?(input: z.output<S>): ForkedRunUpload;
  /** The operation changes something: a read-only token is refused (403). */
  writes?: true;
};

export function operation<S extends z.ZodType>(op: Operation<S>): Operation {
  return op as unknown as Operation;
}

export const EMPTY = {};
/** An answer already serialized (from the ReadCache). */
export const json = (body: string): RawResponse => ({ raw: true, contentType: "application/json; charset=utf-8", body });
