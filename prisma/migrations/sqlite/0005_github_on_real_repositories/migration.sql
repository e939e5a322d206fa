-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN "failureMessage" TEXT;

-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN "ciPolledAt" DATETIME;

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
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
CREATE INDEX "TestRun_status_idx" ON "TestRun"("status");

