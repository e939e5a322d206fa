-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN "directMergeBase" TEXT;

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_TestRun" (
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
    "statusChecks" TEXT NOT NULL DEFAULT '{}',
    "archived" BOOLEAN NOT NULL DEFAULT false,
    CONSTRAINT "TestRun_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_TestRun" ("archived", "baseSha", "failure", "finishedAt", "id", "kind", "queueId", "runId", "stack", "startedAt", "status", "testBranch", "testBranchSha", "tested") SELECT "archived", "baseSha", "failure", "finishedAt", "id", "kind", "queueId", "runId", "stack", "startedAt", "status", "testBranch", "testBranchSha", "tested" FROM "TestRun";
DROP TABLE "TestRun";
ALTER TABLE "new_TestRun" RENAME TO "TestRun";
CREATE INDEX "TestRun_queueId_archived_idx" ON "TestRun"("queueId", "archived");
CREATE INDEX "TestRun_testBranchSha_idx" ON "TestRun"("testBranchSha");
CREATE UNIQUE INDEX "TestRun_queueId_runId_key" ON "TestRun"("queueId", "runId");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

