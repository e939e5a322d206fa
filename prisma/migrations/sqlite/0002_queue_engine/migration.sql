-- CreateTable
CREATE TABLE "TestRun" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "queueId" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "baseSha" TEXT NOT NULL,
    "stack" TEXT NOT NULL,
    "tested" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "failure" TEXT,
    "startedAt" DATETIME NOT NULL,
    "finishedAt" DATETIME,
    "testBranch" TEXT,
    "testBranchSha" TEXT,
    "archived" BOOLEAN NOT NULL DEFAULT false,
    CONSTRAINT "TestRun_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Effect" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "queueId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "kind" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL,
    "doneAt" DATETIME,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lastError" TEXT,
    CONSTRAINT "Effect_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "QueueEvent" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "queueId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "at" DATETIME NOT NULL,
    CONSTRAINT "QueueEvent_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "SandboxCommit" (
    "sha" TEXT NOT NULL PRIMARY KEY,
    "repoKey" TEXT NOT NULL,
    "parentSha" TEXT,
    "tree" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "SandboxRef" (
    "repoKey" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "sha" TEXT NOT NULL,

    PRIMARY KEY ("repoKey", "name")
);

-- CreateTable
CREATE TABLE "SandboxPullRequest" (
    "repoKey" TEXT NOT NULL,
    "number" INTEGER NOT NULL,
    "title" TEXT NOT NULL,
    "author" TEXT NOT NULL,
    "baseBranch" TEXT NOT NULL,
    "baseSha" TEXT NOT NULL,
    "headSha" TEXT NOT NULL,
    "patch" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "broken" BOOLEAN NOT NULL,

    PRIMARY KEY ("repoKey", "number")
);

-- CreateTable
CREATE TABLE "SandboxCiJob" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "queueId" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "sha" TEXT NOT NULL,
    "dueAt" DATETIME NOT NULL,
    "outcome" TEXT NOT NULL,
    "deliveredAt" DATETIME
);

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
INSERT INTO "new_Queue" ("batch", "batchingMaxWaitTimeMinutes", "batchingMinSize", "bisectionConcurrency", "branch", "canOptimisticallyMerge", "commandsEnabled", "commentsEnabled", "concurrency", "createPrsForTestingBranches", "createdAt", "directMergeMode", "id", "mergeMethod", "mode", "optimizationMode", "pendingFailureDepth", "pendingMode", "repositoryId", "requiredStatuses", "state", "statusCheckEnabled", "testingTimeoutMinutes", "updatedAt", "version") SELECT "batch", "batchingMaxWaitTimeMinutes", "batchingMinSize", "bisectionConcurrency", "branch", "canOptimisticallyMerge", "commandsEnabled", "commentsEnabled", "concurrency", "createPrsForTestingBranches", "createdAt", "directMergeMode", "id", "mergeMethod", "mode", "optimizationMode", "pendingFailureDepth", "pendingMode", "repositoryId", "requiredStatuses", "state", "statusCheckEnabled", "testingTimeoutMinutes", "updatedAt", "version" FROM "Queue";
DROP TABLE "Queue";
ALTER TABLE "new_Queue" RENAME TO "Queue";
CREATE UNIQUE INDEX "Queue_repositoryId_branch_key" ON "Queue"("repositoryId", "branch");
CREATE TABLE "new_QueueEntry" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "queueId" TEXT NOT NULL,
    "prNumber" INTEGER NOT NULL,
    "prTitle" TEXT NOT NULL,
    "prSha" TEXT NOT NULL,
    "prBaseBranch" TEXT NOT NULL,
    "prAuthor" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "stateChangedAt" DATETIME NOT NULL,
    "stateReason" TEXT NOT NULL,
    "priorityValue" INTEGER NOT NULL,
    "priorityName" TEXT NOT NULL,
    "usedDefaultPriorityName" TEXT,
    "noBatch" BOOLEAN NOT NULL,
    "forceEnqueued" BOOLEAN NOT NULL DEFAULT false,
    "isCurrentlySubmitted" BOOLEAN NOT NULL,
    "mergeability" TEXT NOT NULL,
    "ready" BOOLEAN NOT NULL DEFAULT true,
    "bisectionGroupLimit" INTEGER,
    "linePosition" BIGINT,
    "submittedAt" DATETIME NOT NULL,
    CONSTRAINT "QueueEntry_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_QueueEntry" ("forceEnqueued", "id", "isCurrentlySubmitted", "mergeability", "noBatch", "prAuthor", "prBaseBranch", "prNumber", "prSha", "prTitle", "priorityName", "priorityValue", "queueId", "state", "stateChangedAt", "stateReason", "submittedAt", "usedDefaultPriorityName") SELECT "forceEnqueued", "id", "isCurrentlySubmitted", "mergeability", "noBatch", "prAuthor", "prBaseBranch", "prNumber", "prSha", "prTitle", "priorityName", "priorityValue", "queueId", "state", "stateChangedAt", "stateReason", "submittedAt", "usedDefaultPriorityName" FROM "QueueEntry";
DROP TABLE "QueueEntry";
ALTER TABLE "new_QueueEntry" RENAME TO "QueueEntry";
CREATE INDEX "QueueEntry_queueId_state_idx" ON "QueueEntry"("queueId", "state");
CREATE INDEX "QueueEntry_queueId_priorityValue_submittedAt_idx" ON "QueueEntry"("queueId", "priorityValue", "submittedAt");
CREATE UNIQUE INDEX "QueueEntry_queueId_prNumber_key" ON "QueueEntry"("queueId", "prNumber");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "TestRun_queueId_archived_idx" ON "TestRun"("queueId", "archived");

-- CreateIndex
CREATE UNIQUE INDEX "TestRun_queueId_runId_key" ON "TestRun"("queueId", "runId");

-- CreateIndex
CREATE INDEX "Effect_queueId_doneAt_idx" ON "Effect"("queueId", "doneAt");

-- CreateIndex
CREATE UNIQUE INDEX "Effect_queueId_seq_key" ON "Effect"("queueId", "seq");

-- CreateIndex
CREATE INDEX "QueueEvent_queueId_at_idx" ON "QueueEvent"("queueId", "at");

-- CreateIndex
CREATE INDEX "SandboxCommit_repoKey_idx" ON "SandboxCommit"("repoKey");

-- CreateIndex
CREATE INDEX "SandboxCiJob_deliveredAt_dueAt_idx" ON "SandboxCiJob"("deliveredAt", "dueAt");

