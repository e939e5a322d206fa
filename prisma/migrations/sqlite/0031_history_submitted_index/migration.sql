-- CreateIndex
CREATE INDEX "QueueEntry_submittedAt_id_idx" ON "QueueEntry"("submittedAt", "id");

