-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN "ciPolledAt" DATETIME;

-- CreateTable
CREATE TABLE "WebhookDelivery" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "deliveryId" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "action" TEXT,
    "repositoryKey" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "receivedAt" DATETIME NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" DATETIME NOT NULL,
    "processedAt" DATETIME,
    "failedAt" DATETIME,
    "lastError" TEXT
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
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
    "directMergeBase" TEXT,
    "failureMessage" TEXT,
    "submittedAt" DATETIME NOT NULL,
    "readinessRecheckAt" DATETIME,
    "readinessRechecks" INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT "QueueEntry_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_QueueEntry" ("bisectionGroupLimit", "directMergeBase", "forceEnqueued", "id", "isCurrentlySubmitted", "linePosition", "mergeability", "noBatch", "prAuthor", "prBaseBranch", "prNumber", "prSha", "prTitle", "priorityName", "priorityValue", "queueId", "ready", "state", "stateChangedAt", "stateReason", "submittedAt", "usedDefaultPriorityName") SELECT "bisectionGroupLimit", "directMergeBase", "forceEnqueued", "id", "isCurrentlySubmitted", "linePosition", "mergeability", "noBatch", "prAuthor", "prBaseBranch", "prNumber", "prSha", "prTitle", "priorityName", "priorityValue", "queueId", "ready", "state", "stateChangedAt", "stateReason", "submittedAt", "usedDefaultPriorityName" FROM "QueueEntry";
DROP TABLE "QueueEntry";
ALTER TABLE "new_QueueEntry" RENAME TO "QueueEntry";
CREATE INDEX "QueueEntry_queueId_state_idx" ON "QueueEntry"("queueId", "state");
CREATE INDEX "QueueEntry_queueId_priorityValue_submittedAt_idx" ON "QueueEntry"("queueId", "priorityValue", "submittedAt");
CREATE UNIQUE INDEX "QueueEntry_queueId_prNumber_key" ON "QueueEntry"("queueId", "prNumber");
CREATE TABLE "new_Effect" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "queueId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "kind" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL,
    "doneAt" DATETIME,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lastError" TEXT,
    "nextAttemptAt" DATETIME,
    "gaveUp" BOOLEAN NOT NULL DEFAULT false,
    CONSTRAINT "Effect_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Effect" ("attempts", "createdAt", "doneAt", "id", "kind", "lastError", "payload", "queueId", "seq") SELECT "attempts", "createdAt", "doneAt", "id", "kind", "lastError", "payload", "queueId", "seq" FROM "Effect";
DROP TABLE "Effect";
ALTER TABLE "new_Effect" RENAME TO "Effect";
CREATE INDEX "Effect_queueId_doneAt_idx" ON "Effect"("queueId", "doneAt");
CREATE UNIQUE INDEX "Effect_queueId_seq_key" ON "Effect"("queueId", "seq");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE UNIQUE INDEX "WebhookDelivery_deliveryId_key" ON "WebhookDelivery"("deliveryId");

-- CreateIndex
CREATE INDEX "WebhookDelivery_processedAt_failedAt_repositoryKey_idx" ON "WebhookDelivery"("processedAt", "failedAt", "repositoryKey");

-- CreateIndex
CREATE INDEX "TestRun_status_idx" ON "TestRun"("status");

