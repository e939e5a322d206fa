-- CreateTable
CREATE TABLE "WorkerSweep" (
    "name" TEXT NOT NULL PRIMARY KEY,
    "dueAt" DATETIME NOT NULL
);

-- CreateIndex
CREATE INDEX "QueueEntry_state_readinessRecheckAt_idx" ON "QueueEntry"("state", "readinessRecheckAt");

