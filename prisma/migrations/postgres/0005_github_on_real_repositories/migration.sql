-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN     "failureMessage" TEXT,
ADD COLUMN     "readinessRecheckAt" TIMESTAMP(3),
ADD COLUMN     "readinessRechecks" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN     "ciPolledAt" TIMESTAMP(3);

-- AlterTable
ALTER TABLE "Effect" ADD COLUMN     "gaveUp" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "nextAttemptAt" TIMESTAMP(3);

-- CreateTable
CREATE TABLE "WebhookDelivery" (
    "id" TEXT NOT NULL,
    "deliveryId" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "action" TEXT,
    "repositoryKey" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "receivedAt" TIMESTAMP(3) NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" TIMESTAMP(3) NOT NULL,
    "processedAt" TIMESTAMP(3),
    "failedAt" TIMESTAMP(3),
    "lastError" TEXT,

    CONSTRAINT "WebhookDelivery_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "WebhookDelivery_deliveryId_key" ON "WebhookDelivery"("deliveryId");

-- CreateIndex
CREATE INDEX "WebhookDelivery_processedAt_failedAt_repositoryKey_idx" ON "WebhookDelivery"("processedAt", "failedAt", "repositoryKey");

-- CreateIndex
CREATE INDEX "TestRun_status_idx" ON "TestRun"("status");

