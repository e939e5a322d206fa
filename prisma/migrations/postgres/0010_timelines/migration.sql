-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN     "timelineCount" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "Transition" ADD COLUMN     "actorKind" TEXT NOT NULL DEFAULT 'engine',
ADD COLUMN     "actorName" TEXT NOT NULL DEFAULT 'greenline',
ADD COLUMN     "evidence" TEXT NOT NULL DEFAULT '{}',
ADD COLUMN     "message" TEXT;

-- AlterTable
ALTER TABLE "QueueEvent" ADD COLUMN     "actorKind" TEXT,
ADD COLUMN     "actorName" TEXT;

-- CreateIndex
CREATE INDEX "TestRun_queueId_startedAt_idx" ON "TestRun"("queueId", "startedAt");

