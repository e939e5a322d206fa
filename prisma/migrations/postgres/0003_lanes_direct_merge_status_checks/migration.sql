-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN     "directMergeBase" TEXT;

-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN     "statusChecks" TEXT NOT NULL DEFAULT '{}';

-- CreateIndex
CREATE INDEX "TestRun_testBranchSha_idx" ON "TestRun"("testBranchSha");

