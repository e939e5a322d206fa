-- Durations recorded when a transition is written (the metrics aggregate them over an index
-- range of the last hour instead of replaying every PR's history): expand only.
ALTER TABLE "QueueEntry" ADD COLUMN "notReadyMs" REAL NOT NULL DEFAULT 0;
ALTER TABLE "QueueEntry" ADD COLUMN "notReadySubmittedAt" DATETIME;
ALTER TABLE "Transition" ADD COLUMN "queuedMs" REAL;
ALTER TABLE "Transition" ADD COLUMN "stateMs" REAL;

-- CreateIndex
CREATE INDEX "Transition_at_idx" ON "Transition"("at");
