-- Durations recorded when a transition is written (the metrics aggregate them over an index
-- range of the last hour instead of replaying every PR's history): expand only.
-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN     "notReadyMs" DOUBLE PRECISION NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "Transition" ADD COLUMN     "queuedMs" DOUBLE PRECISION,
ADD COLUMN     "stateMs" DOUBLE PRECISION;

-- CreateIndex
CREATE INDEX "Transition_at_idx" ON "Transition"("at");


-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN "notReadySubmittedAt" TIMESTAMP(3);
