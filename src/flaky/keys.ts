import type { CodeOwners } from "../domain/flaky/codeowners.js";
import { testCaseId } from "../domain/flaky/identity.js";
import type { JUnitCase } from "../formats/junit.js";
import { findTestCaseKeys, insertTestCases } from "../store/flaky-store.js";
import type { Sql } from "../store/sql.js";

/** What a test's identity is made of besides its name (and the upload's variant); a suite's testcases share it. */
type Group = Pick<JUnitCase, "file" | "classname" | "parent" | "explicitId">;

const groupKey = (c: Group, variant: string) => `${c.file}\u0000${c.classname}\u0000${c.parent}\u0000${c.explicitId}\u0000${variant}`;

/** A copy of `text` that shares no memory with the string it was cut from (a report). */
const detach = (text: string) => ` ${text}`.slice(1);

/**
 * Test case keys by identity, held as groups of names: consecutive testcases of a report share
 * their group, so a lookup is mostly a comparison with the previous testcase's group and one
 * lookup by name, and each remembered test costs about its name.
 */
export class TestKeys {
  readonly #groups = new Map<string, Map<string, number>>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  clear(): void {
    this.#groups.clear();
    this.#size = 0;
  }

  /** Looks testcases up, remembering the last one's group (a batch's lookup, dropped with it). */
  lookup(variant: string): (c: JUnitCase) => number | undefined {
    let last: Group | null = null;
    let names: Map<string, number> | undefined;
    return (c) => {
      if (last === null || c.file !== last.file || c.classname !== last.classname || c.parent !== last.parent || c.explicitId !== last.explicitId) {
        names = this.#groups.get(groupKey(c, variant));
        last = c;
      }
      return names?.get(c.name);
    };
  }

  set(c: Group & { name: string }, variant: string, key: number): void {
    const group = groupKey(c, variant);
    let names = this.#groups.get(group);
    if (!names) this.#groups.set(group, (names = new Map()));
    const name = detach(c.name);
    if (!names.has(name)) this.#size++;
    names.set(name, key);
  }

  absorb(other: TestKeys): void {
    for (const [group, names] of other.#groups) {
      let mine = this.#groups.get(group);
      if (!mine) this.#groups.set(group, (mine = new Map()));
      for (const [name, key] of names) {
        if (!mine.has(name)) this.#size++;
        mine.set(name, key);
      }
    }
  }
}

/**
 * Tests already stored, by repository: a test's key never changes once assigned (rows go only
 * with their repository), so each process remembers the tests it has stored, and a repeated
 * upload of known tests neither hashes their ids nor looks up their keys. Bounded: past the
 * limit (all repositories together) the memory starts over.
 */
const KNOWN_TESTS_LIMIT = 200_000;
const knownTests = new WeakMap<object, Map<string, TestKeys>>();

export function forgetIfFull(db: object, adding: number): void {
  const byRepository = knownTests.get(db);
  let size = adding;
  for (const known of byRepository?.values() ?? []) size += known.size;
  if (size > KNOWN_TESTS_LIMIT) for (const known of byRepository?.values() ?? []) known.clear();
}

export function knownTestsOf(db: object, repositoryId: string): TestKeys {
  let byRepository = knownTests.get(db);
  if (!byRepository) knownTests.set(db, (byRepository = new Map()));
  let known = byRepository.get(repositoryId);
  if (!known) byRepository.set(repositoryId, (known = new TestKeys()));
  return known;
}

/** Whose tests a batch's testcases are, and what new tests are stored with. */
export type TestScope = {
  repositoryId: string;
  /** As first registered: ids hash it, so a client's casing cannot split a test. */
  repoFullName: string;
  orgSlug: string;
  variant: string;
  owners: CodeOwners | null;
  now: Date;
  /** The tests this process remembers of the repository. */
  known: TestKeys;
  /** The repository was registered by this upload: none of its tests can be stored yet. */
  newRepository: boolean;
};

/**
 * The test case key of each testcase of a batch: remembered (the identity cache, or earlier in
 * this upload, `learned`), else looked up, else the test is new and inserted with its owners.
 * Answers the keys and which of them were inserted.
 */
export async function identify(sql: Sql, scope: TestScope, batch: JUnitCase[], learned: TestKeys): Promise<{ keys: number[]; inserted: Set<number> }> {
  const { variant } = scope;
  const keys = new Array<number>(batch.length);
  const unknown = new Map<string, { id: string; cases: number[]; test: JUnitCase }>();
  const known = scope.known.lookup(variant);
  const learnedEarlier = learned.lookup(variant);
  batch.forEach((c, i) => {
    const key = known(c) ?? learnedEarlier(c);
    if (key !== undefined) {
      keys[i] = key;
      return;
    }
    const id = testCaseId(scope.orgSlug, scope.repoFullName, c, variant, c.explicitId);
    const seen = unknown.get(id);
    if (seen) seen.cases.push(i);
    else unknown.set(id, { id, cases: [i], test: c });
  });
  const inserted = new Set<number>();
  if (unknown.size === 0) return { keys, inserted };
  const found = new Map<string, number>();
  const lookUp = async (ids: string[]) => {
    for (const [id, key] of await findTestCaseKeys(sql, scope.repositoryId, ids)) found.set(id, key);
  };
  if (!scope.newRepository) await lookUp([...unknown.keys()]);
  const fresh = [...unknown.values()].filter((t) => !found.has(t.id));
  const newKeys = await insertTestCases(
    sql,
    scope.repositoryId,
    fresh.map(({ id, test: c }) => ({ id, name: c.name, file: c.file, classname: c.classname, parent: c.parent, variant, codeowners: scope.owners?.ownersOf(c.file) ?? [] })),
    scope.now,
  );
  fresh.forEach((t, i) => {
    const key = newKeys[i];
    if (key === undefined) return;
    found.set(t.id, key);
    inserted.add(key);
  });
  // Inserted meanwhile by a concurrent upload (PostgreSQL): read their keys.
  const late = fresh.filter((t) => !found.has(t.id)).map((t) => t.id);
  if (late.length > 0) await lookUp(late);
  for (const t of unknown.values()) {
    const key = found.get(t.id)!;
    for (const i of t.cases) {
      keys[i] = key;
      learned.set(batch[i]!, variant, key);
    }
  }
  return { keys, inserted };
}
