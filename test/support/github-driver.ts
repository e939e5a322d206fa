import type { GitHubSimulator } from "./github-simulator.js";
import type { ApiClient, TestServer } from "./harness.js";
import { installationCreated, postWebhook } from "./webhook-post.js";

/** A timeline entry of a submitted PR, as getSubmittedPullRequest answers it. */
export type TimelineEntry = {
  reason: string;
  previousState: string;
  state: string;
  message: string;
  actor: { kind: string };
  evidence: Record<string, unknown>;
};

/**
 * One account's GitHub, talking to Greenline the way the tests of test/github do: webhooks posted
 * as GitHub posts them (signed by the simulator), CI reporting on testing branches, and the API
 * asked what became of a PR. Bound to a running server, the simulator, an API client of the
 * account's organization and its installation. The worker runs only where a verb says so:
 * `deliver` has it process webhook deliveries (nothing else), `deliverThenDrain` drains it,
 * `post` leaves it alone.
 */
export class GitHubDriver {
  /** Commits CI already reported on (`ciPasses` reports each testing branch's commit once). */
  readonly #reported = new Set<string>();

  #api: ApiClient | undefined;

  /** `api` undefined: the organization signs in later (`signIn`), once Greenline knows it. */
  constructor(
    readonly server: TestServer,
    readonly gh: GitHubSimulator,
    api: ApiClient | undefined,
    readonly owner: string,
    readonly installation: number,
  ) {
    this.#api = api;
  }

  /** The API client of the account's organization. */
  get api(): ApiClient {
    if (!this.#api) throw new Error(`${this.owner} has not signed in to Greenline yet`);
    return this.#api;
  }

  /** Signs in to Greenline's API as the account's organization (which an installation webhook created). */
  async signIn(): Promise<ApiClient> {
    this.#api = await this.server.clientFor(this.owner);
    return this.#api;
  }

  /**
   * Installs the App on organization `owner` in the simulator, delivers the `installation`
   * webhook (the account's id is `accountId`) and signs in as the organization. `drain` drains
   * the worker after the delivery instead of only processing it.
   */
  static async install(server: TestServer, gh: GitHubSimulator, options: { owner: string; installation: number; accountId?: number; drain?: boolean }): Promise<GitHubDriver> {
    const { owner, installation } = options;
    gh.installApp(installation, owner);
    await accepted("installation", await postWebhook(server.url, gh, "installation", installationCreated(installation, owner, options.accountId)));
    if (options.drain) await server.greenline.worker.drain();
    else await server.greenline.worker.processWebhooks();
    const driver = new GitHubDriver(server, gh, undefined, owner, installation);
    await driver.signIn();
    return driver;
  }

  /** "owner/name", as GitHub names repository `name` of the account. */
  fullName(name: string): string {
    return `${this.owner}/${name}`;
  }

  /** The `repository` of a webhook payload about repository `name`. */
  repository(name: string) {
    return { name, full_name: this.fullName(name), html_url: `https://github.com/${this.fullName(name)}`, owner: { login: this.owner } };
  }

  /** The `repository` of a `push` payload: GitHub gives its owner a `name` there too. */
  pushRepository(name: string) {
    const repository = this.repository(name);
    return { ...repository, owner: { ...repository.owner, name: this.owner } };
  }

  /** The API's address of the queue of repository `name` on `main`. */
  queue(name: string) {
    return { repo: { host: "github.com", owner: this.owner, name }, targetBranch: "main" };
  }

  /** The API's address of PR `number` in the queue of repository `name`. */
  pr(name: string, number: number) {
    return { ...this.queue(name), pr: { number } };
  }

  /** The PR as the API shows it (getSubmittedPullRequest). */
  submitted(name: string, number: number) {
    return this.api.ok("getSubmittedPullRequest", this.pr(name, number));
  }

  async stateOf(name: string, number: number): Promise<string> {
    return (await this.submitted(name, number)).state;
  }

  async timelineOf(name: string, number: number): Promise<TimelineEntry[]> {
    return (await this.api.ok("getSubmittedPullRequest", { ...this.pr(name, number), includeTimeline: true })).timeline;
  }

  /** Posts a webhook as GitHub does; the worker does not run. Answers Greenline's response. */
  post(event: string, payload: object, deliveryId?: string): Promise<Response> {
    return postWebhook(this.server.url, this.gh, event, payload, deliveryId);
  }

  /** Posts a webhook that Greenline must accept (200); the worker does not run. */
  async postAccepted(event: string, payload: object): Promise<void> {
    await accepted(event, await this.post(event, payload));
  }

  /** Posts a webhook Greenline must accept (200), then has the worker process the deliveries recorded (and do nothing else). */
  async deliver(event: string, payload: object): Promise<void> {
    await this.postAccepted(event, payload);
    await this.server.greenline.worker.processWebhooks();
  }

  /** Posts a webhook Greenline must accept (200), then drains the worker: what the delivery changed is acted on. */
  async deliverThenDrain(event: string, payload: object): Promise<void> {
    await this.postAccepted(event, payload);
    await this.drain();
  }

  /** Posts a webhook, whatever Greenline answers, then has the worker process the deliveries recorded. Answers the HTTP status. */
  async deliverAnswering(event: string, payload: object): Promise<number> {
    const response = await this.post(event, payload);
    await this.server.greenline.worker.processWebhooks();
    return response.status;
  }

  /** Ticks the worker until there is nothing left to do now. */
  drain(): Promise<void> {
    return this.server.greenline.worker.drain();
  }

  /** The testing branches on GitHub of repository `name`. */
  testingBranches(name: string) {
    return this.gh.branches(this.fullName(name), "greenline/");
  }

  /** A commit status webhook: `context` is `state` on commit `sha` of repository `name`. */
  statusPayload(name: string, sha: string, context: string, state: string) {
    return { sha, context, state, repository: this.repository(name), installation: { id: this.installation } };
  }

  /**
   * CI: `ci/test` green on every testing branch of repository `name` whose commit was not
   * reported yet, one `status` delivery each. Answers how many it reported.
   */
  async ciPasses(name: string): Promise<number> {
    let reported = 0;
    for (const branch of this.testingBranches(name)) {
      if (this.#reported.has(branch.sha)) continue;
      reported++;
      await this.ciPassesOn(name, branch.sha);
    }
    return reported;
  }

  /** CI: `ci/test` green on commit `sha` of repository `name` (one `status` delivery); `ciPasses` will not report it again. */
  async ciPassesOn(name: string, sha: string): Promise<void> {
    this.#reported.add(sha);
    await this.deliver("status", this.statusPayload(name, sha, "ci/test", "success"));
  }

  /** CI: `ci/test` green on every testing branch of repository `name`, reported or not before. */
  async ciPassesOnEveryBranch(name: string): Promise<void> {
    for (const branch of this.testingBranches(name)) await this.deliver("status", this.statusPayload(name, branch.sha, "ci/test", "success"));
  }
}

/** Throws unless Greenline accepted the delivery (a plain error naming the event and Greenline's answer). */
async function accepted(event: string, response: Response): Promise<void> {
  if (response.status !== 200) throw new Error(`the ${event} delivery was answered ${response.status}: ${await response.text()}`);
}
