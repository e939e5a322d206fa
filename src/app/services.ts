import type { CodeHost } from "../ports/code-host.js";
import type { Logger } from "../log.js";
import type { Database } from "../store/database.js";
import type { ReadCache } from "./read-cache.js";

/** What the application services need from the outside world; main.ts builds it. */
export type Services = {
  db: Database;
  codeHost: CodeHost;
  now: () => Date;
  newId: () => string;
  readCache: ReadCache;
  log?: Logger;
};
