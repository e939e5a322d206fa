-- CreateTable (UNLOGGED: a sweep's claim is worth nothing after a crash; the next claim makes a lost row again)
CREATE UNLOGGED TABLE "WorkerSweep" (
    "name" TEXT NOT NULL,
    "dueAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "WorkerSweep_pkey" PRIMARY KEY ("name")
);

-- CreateIndex
CREATE INDEX "QueueEntry_state_readinessRecheckAt_idx" ON "QueueEntry"("state", "readinessRecheckAt");

