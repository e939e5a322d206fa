/** A signed-in dashboard visitor without a browser: plain HTTP with the session cookie, as a browser would send it. */
export class DashboardClient {
  constructor(
    readonly baseUrl: string,
    readonly cookie: string,
  ) {}

  /** Signs in with `token` through the sign-in form; throws when refused. */
  static async signIn(baseUrl: string, token: string): Promise<DashboardClient> {
    const response = await fetch(`${baseUrl}/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: baseUrl },
      body: new URLSearchParams({ token, next: "/" }),
    });
    if (response.status !== 303) throw new Error(`sign-in answered ${response.status}: ${await response.text()}`);
    const cookie = response.headers.get("set-cookie")!.split(";")[0]!;
    return new DashboardClient(baseUrl, cookie);
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string; headers: Headers }> {
    const response = await fetch(`${this.baseUrl}${path}`, { redirect: "manual", headers: { cookie: this.cookie, ...headers } });
    return { status: response.status, text: await response.text(), headers: response.headers };
  }

  /** The CSRF token the dashboard's pages carry for this session. */
  async csrf(): Promise<string> {
    const { text } = await this.get("/");
    const token = /<meta name="csrf-token" content="([^"]+)">/.exec(text)?.[1];
    if (!token) throw new Error("no csrf-token meta on the overview page");
    return token;
  }

  async post(path: string, form: Record<string, string>, headers: Record<string, string> = { origin: this.baseUrl }): Promise<{ status: number; text: string; headers: Headers }> {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: this.cookie, ...headers },
      body: new URLSearchParams(form),
    });
    return { status: response.status, text: await response.text(), headers: response.headers };
  }
}

/** The queue page's address for a test queue. */
export const queuePath = (name = "web", branch = "main", owner = "acme") => `/queues/github.com/${owner}/${name}/${branch}`;
/** The hidden fields of an action on a test queue. */
export const queueForm = (name = "web", branch = "main", owner = "acme") => ({ host: "github.com", owner, repo: name, branch });
