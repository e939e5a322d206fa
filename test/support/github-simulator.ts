import { SimulatorServer } from "./github/server.js";

export { type Manifest, APP_PERMISSIONS } from "./github/app-manifest.js";
export type { SimulatorCheckRun, SimulatorCommit, SimulatorEvent, SimulatorPullRequest } from "./github/events.js";
export { SUSPENDED_MESSAGE } from "./github/installations.js";
export { APP_BOT, type SimulatorOptions } from "./github/model.js";
export type { SimulatorRequest } from "./github/request-log.js";

/**
 * A simulated GitHub, served over HTTP so the real Octokit (through Probot) talks to it, and as
 * strict as GitHub where Greenline meets it: App permissions (403 "Resource not accessible by
 * integration"), classic branch protection and rulesets enforced on ref updates and merges with
 * GitHub's status codes and messages, workflow files refused without `workflows: write`,
 * mergeability computed lazily, branches that do not exist answer 404, statuses and check runs
 * stored and validated. It keeps a small model — installations; repositories as commit graphs with
 * whole trees and branches; pull requests (one commit on top of the base they were opened on) —
 * and speaks in domain verbs (`installApp`, `openPr`, `protect`, `addRuleset`, `reportStatus`,
 * `createCheckRun`, `approve`). Everything that happens is reported to `onEvent` (webhooks).
 * Sources of the behaviour: docs/github.md, "The simulator and its sources".
 *
 * The simulator is split by concern under test/support/github/, each part a layer of this class
 * on top of the shared model (model.ts, events.ts): the App and its installations
 * (installations.ts), user sign-in (oauth.ts), App registration (app-manifest.ts), statuses and
 * check runs (checks.ts), GitHub Actions (actions.ts), branch protection and rulesets
 * (protection.ts, judged by rules.ts), repositories and git data (repositories.ts), pull requests
 * (pulls.ts) and merging them (merge.ts), rate limits and faults (rate-limits.ts), and the HTTP
 * server with the request log (server.ts, request-log.ts). Answers are shaped by shapes.ts;
 * permissions.ts says what each route needs.
 */
export class GitHubSimulator extends SimulatorServer {}
