import { createToken } from "../../src/auth/tokens.js";
import { SessionKeys } from "../../src/web/session.js";
import { BACKENDS } from "../support/backends.js";
import { DashboardClient } from "../support/dashboard.js";
import { startTestServer, type TestServer } from "../support/harness.js";

/** The session cookie's format: one session type whose subject is an API token or a GitHub user. */
describe("dashboard sessions", () => {
  const keys = new SessionKeys("k".repeat(32));
  const later = Date.now() + 60_000;

  test("a token session and a GitHub session each open as sealed; an expired or re-signed one does not", () => {
    const token = { subject: { kind: "token" as const, tokenId: "t1" }, organizationId: "o1", expiresAt: later };
    const github = { subject: { kind: "github" as const, login: "alice", role: "read" as const }, organizationId: "o2", expiresAt: later };
    expect(keys.open(keys.seal(token), Date.now())).toEqual(token);
    expect(keys.open(keys.seal(github), Date.now())).toEqual(github);
    expect(keys.open(keys.seal(github), later)).toBeNull();
    expect(new SessionKeys("x".repeat(32)).open(keys.seal(github), Date.now())).toBeNull();
  });

  test("a cookie sealed before GitHub sign-in (the token id alone) still opens as a token session", () => {
    const legacy = keys.sign("session", ["t1", "o1", later]);
    expect(keys.open(legacy, Date.now())).toEqual({ subject: { kind: "token", tokenId: "t1" }, organizationId: "o1", expiresAt: later });
  });

  test("a subject of another kind, a role that is not one, or another purpose's signature is refused", () => {
    expect(keys.open(keys.sign("session", [["admin", "alice"], "o1", later]), Date.now())).toBeNull();
    expect(keys.open(keys.sign("session", [["github", "alice", "owner"], "o1", later]), Date.now())).toBeNull();
    expect(keys.open(keys.sign("oauth", [["github", "alice", "write"], "o1", later]), Date.now())).toBeNull();
  });
});

/** Signing out revokes the session server-side: the cookie, replayed, no longer opens (defect: it stayed valid for its 12 h). */
describe.each(BACKENDS)("signing out on $name", (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
  });
  afterAll(() => server?.close());

  test("the signed-out cookie, replayed, is refused like no session; another session of the organization goes on", async () => {
    const leaving = await DashboardClient.signIn(server.url, server.api.token);
    const staying = await DashboardClient.signIn(server.url, (await createToken(server.greenline.services.db, "acme", "another")).token);
    expect((await leaving.get("/")).status).toBe(200);
    const out = await leaving.post("/sign-out", { csrf: await leaving.csrf() });
    expect([out.status, out.headers.get("location")]).toEqual([303, "/sign-in"]);
    const replayed = await leaving.get("/");
    expect([replayed.status, replayed.headers.get("location")]).toEqual([303, "/sign-in?next=%2F"]);
    expect((await leaving.post("/sign-out", { csrf: "x" })).status).toBe(401);
    expect((await staying.get("/")).status).toBe(200);
  });
});
