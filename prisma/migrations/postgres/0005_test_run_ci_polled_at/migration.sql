-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN     "ciPolledAt" TIMESTAMP(3);

-- CreateIndex
CREATE INDEX "TestRun_status_idx" ON "TestRun"("status");

