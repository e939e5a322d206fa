-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN "estimatedMergeAt" DATETIME;

