import { previousDependenciesInstalledHere, previousReleaseCommit, previousReleaseFiles } from "../support/previous-release.js";

/** release/previous, which the upgrade test builds (test/queue/upgrade.test.ts, docs/operations.md "Upgrades"). */
describe("the previous release", () => {
  test("release/previous names a commit of this history that shipped PostgreSQL migrations", () => {
    const commit = previousReleaseCommit();
    expect(previousReleaseFiles("prisma/migrations/postgres", commit).some((path) => path.endsWith("/migration.sql"))).toBe(true);
  });

  const lock = (packages: Record<string, { version: string; integrity: string }>) => JSON.stringify({ packages: { "": { name: "greenline" }, ...packages } });
  const pg = { "node_modules/pg": { version: "8.23.1", integrity: "sha512-a" } };

  test("reuses this checkout's node_modules only when it holds every package the release locks, as locked", () => {
    expect(previousDependenciesInstalledHere(lock(pg), lock(pg))).toBe(true);
    // A package added since is no matter: the release never imports it.
    expect(previousDependenciesInstalledHere(lock(pg), lock({ ...pg, "node_modules/extra": { version: "1.0.0", integrity: "sha512-b" } }))).toBe(true);
    expect(previousDependenciesInstalledHere(lock(pg), lock({ "node_modules/pg": { version: "8.24.0", integrity: "sha512-c" } }))).toBe(false);
    expect(previousDependenciesInstalledHere(lock(pg), lock({ "node_modules/pg": { version: "8.23.1", integrity: "sha512-other" } }))).toBe(false);
    expect(previousDependenciesInstalledHere(lock({ ...pg, "node_modules/gone": { version: "1.0.0", integrity: "sha512-d" } }), lock(pg))).toBe(false);
  });
});
