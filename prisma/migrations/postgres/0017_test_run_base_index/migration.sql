-- CreateIndex
CREATE INDEX "TestRun_queueId_baseSha_idx" ON "TestRun"("queueId", "baseSha");

