import type { QuarantineSetting, TestStatus } from "./detection.js";
import type { TestIdentity } from "./identity.js";

/** A test case as stored: its identity, owners, status and quarantine. */
export type TestCase = TestIdentity & {
  /** The database's key: results, failures and signatures refer to it. */
  key: number;
  /** The public id (identity.ts). */
  id: string;
  variant: string;
  codeowners: string[];
  status: TestStatus;
  statusReason: string;
  statusAt: Date;
  quarantineSetting: QuarantineSetting;
  quarantined: boolean;
  quarantinedAt: Date | null;
  /** Why the quarantine setting was last set, when someone said. */
  quarantineReason: string | null;
  ticketUrl: string | null;
};

/** What detection reads and writes of a test case. */
export type DetectionState = {
  key: number;
  status: TestStatus;
  /** The latest pass-on-retry evidence, in ms since the epoch. */
  flakeAt: number | null;
  flakeReason: string | null;
  quarantineSetting: QuarantineSetting;
  quarantined: boolean;
};

/** A test not stored yet: its identity and owners; status and quarantine start at their defaults. */
export type NewTestCase = TestIdentity & { id: string; variant: string; codeowners: string[] };
