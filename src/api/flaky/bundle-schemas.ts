import { z } from "zod";
import { storableText, ZName, ZRepo } from "../shared/schemas.js";

// Trunk's analytics CLI (`trunk flakytests upload`): camelCase bodies as it sends them
// (trunk-io/analytics-cli api/src/message.rs; a test as bundle/src/types.rs `Test`).

const ZCliText = z.string().max(4096).check(storableText);
const ZTrunkTest = z.object({
  name: ZCliText,
  parentName: ZCliText,
  className: ZCliText.nullish(),
  file: ZCliText.nullish(),
  id: ZCliText.describe("the client's id of the test (derived as Greenline derives ids, or the testcase's id attribute)"),
  timestamp_millis: z.number().int().min(-8.64e15).max(8.64e15).nullish(),
  is_quarantined: z.boolean().optional(),
  failure_message: z
    .string()
    .max(1024 * 1024)
    .check(storableText)
    .nullish(),
  variant: z.string().max(255).check(storableText).nullish(),
});
export const ZGetQuarantineConfigRequest = z.object({
  repo: ZRepo,
  orgUrlSlug: ZName,
  remoteUrls: z.array(z.string().max(4096).check(storableText)).max(100).optional(),
  testIdentifiers: z.array(ZTrunkTest).max(100_000).default([]).describe("the run's failed tests"),
});
export const ZGetQuarantineConfigResponse = z.strictObject({
  isDisabled: z.boolean().describe("always false: quarantine is never off for a repository (a test set to always stays quarantined)"),
  testIds: z.array(z.string()).describe("the ids, as the client sent them, of the tests that are quarantined"),
});
export const ZCreateBundleUploadRequest = z.object({
  repo: ZRepo,
  orgUrlSlug: ZName,
  clientVersion: ZName.optional(),
  remoteUrls: z.array(z.string().max(4096).check(storableText)).max(100).optional(),
  externalId: z.string().max(1024).check(storableText).nullish(),
  testCollectionShortId: z.string().max(1024).check(storableText).nullish(),
});
export const ZCreateBundleUploadResponse = z.strictObject({
  id: z.string().describe("the bundle's id; its results are stored as the upload of this id"),
  idV2: z.string().describe("the same id"),
  url: z.string().describe("where to PUT the bundle: absolute, signed, valid until it expires (GREENLINE_BUNDLE_URL_TTL_SECONDS)"),
  key: z.string().describe("a name for the bundle (Trunk's clients show it)"),
});
export const ZBundleReceived = z.strictObject({
  id: z.string(),
  stored: z.boolean().describe("false when the bundle was stored already (sent again)"),
  test_cases: z.number().int(),
  failures: z.number().int(),
});
