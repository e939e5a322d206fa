-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN "ciPolledAt" DATETIME;

-- CreateIndex
CREATE INDEX "TestRun_status_idx" ON "TestRun"("status");

