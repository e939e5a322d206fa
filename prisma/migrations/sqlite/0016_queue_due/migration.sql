-- CreateTable
CREATE TABLE "QueueDue" (
    "queueId" TEXT NOT NULL PRIMARY KEY,
    "dueAt" DATETIME NOT NULL,
    "claimedUntil" DATETIME,
    "marks" INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT "QueueDue_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "QueueDue_dueAt_idx" ON "QueueDue"("dueAt");


-- Every queue is looked at once after the upgrade (what it has to do was found by sweeps before).
INSERT INTO "QueueDue" ("queueId", "dueAt") SELECT "id", '1970-01-01T00:00:00.000+00:00' FROM "Queue";
