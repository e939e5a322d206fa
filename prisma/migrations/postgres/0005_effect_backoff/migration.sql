-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN     "failureMessage" TEXT;

-- AlterTable
ALTER TABLE "Effect" ADD COLUMN     "gaveUp" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "nextAttemptAt" TIMESTAMP(3);

