/**
 * Defaults the service and the CLI's help both state. A leaf with no imports: the packaged
 * client CLI (packages/cli) bundles src/cli/usage.ts, which must not pull in config.ts and zod.
 */

export const DEFAULT_DATABASE_URL = "file:./data/greenline.db";
