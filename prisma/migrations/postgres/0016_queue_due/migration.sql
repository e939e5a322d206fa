-- CreateTable
CREATE TABLE "QueueDue" (
    "queueId" TEXT NOT NULL,
    "dueAt" TIMESTAMP(3) NOT NULL,
    "claimedUntil" TIMESTAMP(3),
    "marks" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "QueueDue_pkey" PRIMARY KEY ("queueId")
);

-- CreateIndex
CREATE INDEX "QueueDue_dueAt_idx" ON "QueueDue"("dueAt");

-- AddForeignKey
ALTER TABLE "QueueDue" ADD CONSTRAINT "QueueDue_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue"("id") ON DELETE CASCADE ON UPDATE CASCADE;


-- Every queue is looked at once after the upgrade (what it has to do was found by sweeps before).
INSERT INTO "QueueDue" ("queueId", "dueAt") SELECT "id", TIMESTAMP '1970-01-01 00:00:00' FROM "Queue";
