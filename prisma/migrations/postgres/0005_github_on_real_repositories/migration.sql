-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN     "failureMessage" TEXT;

-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN     "ciPolledAt" TIMESTAMP(3);

-- AlterTable
ALTER TABLE "Effect" ADD COLUMN     "gaveUp" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "nextAttemptAt" TIMESTAMP(3);

-- CreateIndex
CREATE INDEX "TestRun_status_idx" ON "TestRun"("status");

