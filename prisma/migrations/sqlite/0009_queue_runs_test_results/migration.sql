-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN "infrastructureFailure" TEXT;
ALTER TABLE "TestRun" ADD COLUMN "treeKey" TEXT;

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_TestUpload" (
    "key" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "id" TEXT NOT NULL,
    "repositoryId" TEXT NOT NULL,
    "commitSha" TEXT NOT NULL,
    "branch" TEXT NOT NULL,
    "prNumber" INTEGER,
    "jobUrl" TEXT,
    "variant" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL,
    "testCases" INTEGER NOT NULL,
    "failures" INTEGER NOT NULL,
    "runId" TEXT,
    "infrastructureFailure" TEXT,
    CONSTRAINT "TestUpload_repositoryId_fkey" FOREIGN KEY ("repositoryId") REFERENCES "Repository" ("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "TestUpload_runId_fkey" FOREIGN KEY ("runId") REFERENCES "TestRun" ("id") ON DELETE SET NULL ON UPDATE CASCADE
);
INSERT INTO "new_TestUpload" ("branch", "commitSha", "createdAt", "failures", "id", "jobUrl", "key", "prNumber", "repositoryId", "testCases", "variant") SELECT "branch", "commitSha", "createdAt", "failures", "id", "jobUrl", "key", "prNumber", "repositoryId", "testCases", "variant" FROM "TestUpload";
DROP TABLE "TestUpload";
ALTER TABLE "new_TestUpload" RENAME TO "TestUpload";
CREATE UNIQUE INDEX "TestUpload_id_key" ON "TestUpload"("id");
CREATE INDEX "TestUpload_repositoryId_commitSha_idx" ON "TestUpload"("repositoryId", "commitSha");
CREATE INDEX "TestUpload_runId_idx" ON "TestUpload"("runId");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "TestRun_queueId_treeKey_idx" ON "TestRun"("queueId", "treeKey");

