-- AlterTable
ALTER TABLE "QueueEvent" ADD COLUMN "actorKind" TEXT;
ALTER TABLE "QueueEvent" ADD COLUMN "actorName" TEXT;

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
    "timelineCount" INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT "QueueEntry_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_QueueEntry" ("bisectionGroupLimit", "directMergeBase", "failureMessage", "forceEnqueued", "id", "isCurrentlySubmitted", "linePosition", "mergeability", "noBatch", "prAuthor", "prBaseBranch", "prNumber", "prSha", "prTitle", "priorityName", "priorityValue", "queueId", "readinessRecheckAt", "readinessRechecks", "ready", "state", "stateChangedAt", "stateReason", "submittedAt", "usedDefaultPriorityName") SELECT "bisectionGroupLimit", "directMergeBase", "failureMessage", "forceEnqueued", "id", "isCurrentlySubmitted", "linePosition", "mergeability", "noBatch", "prAuthor", "prBaseBranch", "prNumber", "prSha", "prTitle", "priorityName", "priorityValue", "queueId", "readinessRecheckAt", "readinessRechecks", "ready", "state", "stateChangedAt", "stateReason", "submittedAt", "usedDefaultPriorityName" FROM "QueueEntry";
DROP TABLE "QueueEntry";
ALTER TABLE "new_QueueEntry" RENAME TO "QueueEntry";
CREATE INDEX "QueueEntry_queueId_state_idx" ON "QueueEntry"("queueId", "state");
CREATE INDEX "QueueEntry_queueId_priorityValue_submittedAt_idx" ON "QueueEntry"("queueId", "priorityValue", "submittedAt");
CREATE UNIQUE INDEX "QueueEntry_queueId_prNumber_key" ON "QueueEntry"("queueId", "prNumber");
CREATE TABLE "new_Transition" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "entryId" TEXT NOT NULL,
    "queueId" TEXT NOT NULL,
    "fromState" TEXT,
    "toState" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "at" DATETIME NOT NULL,
    "actorKind" TEXT NOT NULL DEFAULT 'engine',
    "actorName" TEXT NOT NULL DEFAULT 'greenline',
    "message" TEXT,
    "evidence" TEXT NOT NULL DEFAULT '{}',
    CONSTRAINT "Transition_entryId_fkey" FOREIGN KEY ("entryId") REFERENCES "QueueEntry" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Transition" ("at", "entryId", "fromState", "id", "queueId", "reason", "toState") SELECT "at", "entryId", "fromState", "id", "queueId", "reason", "toState" FROM "Transition";
DROP TABLE "Transition";
ALTER TABLE "new_Transition" RENAME TO "Transition";
CREATE INDEX "Transition_entryId_at_idx" ON "Transition"("entryId", "at");
CREATE INDEX "Transition_queueId_at_idx" ON "Transition"("queueId", "at");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "TestRun_queueId_startedAt_idx" ON "TestRun"("queueId", "startedAt");

