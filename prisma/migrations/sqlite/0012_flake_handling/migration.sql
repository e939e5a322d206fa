-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN "flakeVerdict" TEXT;

-- AlterTable
ALTER TABLE "TestUpload" ADD COLUMN "checkName" TEXT;
ALTER TABLE "TestUpload" ADD COLUMN "checkRunId" BIGINT;

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_Queue" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "repositoryId" TEXT NOT NULL,
    "branch" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "pendingMode" TEXT,
    "concurrency" BIGINT NOT NULL,
    "bisectionConcurrency" BIGINT NOT NULL,
    "testingTimeoutMinutes" BIGINT NOT NULL,
    "checksStartTimeoutMinutes" BIGINT NOT NULL DEFAULT 10,
    "pendingFailureDepth" BIGINT NOT NULL,
    "canOptimisticallyMerge" BOOLEAN NOT NULL,
    "batch" BOOLEAN NOT NULL,
    "batchingMaxWaitTimeMinutes" BIGINT NOT NULL,
    "batchingMinSize" BIGINT NOT NULL,
    "commentsEnabled" BOOLEAN NOT NULL,
    "commandsEnabled" BOOLEAN NOT NULL,
    "createPrsForTestingBranches" BOOLEAN NOT NULL,
    "statusCheckEnabled" BOOLEAN NOT NULL,
    "requiredStatuses" TEXT,
    "directMergeMode" TEXT NOT NULL,
    "optimizationMode" TEXT NOT NULL,
    "flakeHandling" TEXT NOT NULL DEFAULT 'quarantined',
    "flakyRetries" BIGINT NOT NULL DEFAULT 1,
    "mergeMethod" TEXT NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 0,
    "baseSha" TEXT,
    "mergedPrs" TEXT NOT NULL DEFAULT '[]',
    "nextRunNumber" INTEGER NOT NULL DEFAULT 1,
    "targetHead" TEXT,
    "timerAt" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "Queue_repositoryId_fkey" FOREIGN KEY ("repositoryId") REFERENCES "Repository" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Queue" ("baseSha", "batch", "batchingMaxWaitTimeMinutes", "batchingMinSize", "bisectionConcurrency", "branch", "canOptimisticallyMerge", "checksStartTimeoutMinutes", "commandsEnabled", "commentsEnabled", "concurrency", "createPrsForTestingBranches", "createdAt", "directMergeMode", "id", "mergeMethod", "mergedPrs", "mode", "nextRunNumber", "optimizationMode", "pendingFailureDepth", "pendingMode", "repositoryId", "requiredStatuses", "state", "statusCheckEnabled", "targetHead", "testingTimeoutMinutes", "timerAt", "updatedAt", "version") SELECT "baseSha", "batch", "batchingMaxWaitTimeMinutes", "batchingMinSize", "bisectionConcurrency", "branch", "canOptimisticallyMerge", "checksStartTimeoutMinutes", "commandsEnabled", "commentsEnabled", "concurrency", "createPrsForTestingBranches", "createdAt", "directMergeMode", "id", "mergeMethod", "mergedPrs", "mode", "nextRunNumber", "optimizationMode", "pendingFailureDepth", "pendingMode", "repositoryId", "requiredStatuses", "state", "statusCheckEnabled", "targetHead", "testingTimeoutMinutes", "timerAt", "updatedAt", "version" FROM "Queue";
DROP TABLE "Queue";
ALTER TABLE "new_Queue" RENAME TO "Queue";
CREATE UNIQUE INDEX "Queue_repositoryId_branch_key" ON "Queue"("repositoryId", "branch");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

