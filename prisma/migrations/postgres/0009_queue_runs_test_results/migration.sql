-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN     "infrastructureFailure" TEXT,
ADD COLUMN     "treeKey" TEXT;

-- AlterTable
ALTER TABLE "TestUpload" ADD COLUMN     "infrastructureFailure" TEXT,
ADD COLUMN     "runId" TEXT;

-- CreateIndex
CREATE INDEX "TestRun_queueId_treeKey_idx" ON "TestRun"("queueId", "treeKey");

-- CreateIndex
CREATE INDEX "TestUpload_runId_idx" ON "TestUpload"("runId");

-- AddForeignKey
ALTER TABLE "TestUpload" ADD CONSTRAINT "TestUpload_runId_fkey" FOREIGN KEY ("runId") REFERENCES "TestRun"("id") ON DELETE SET NULL ON UPDATE CASCADE;

