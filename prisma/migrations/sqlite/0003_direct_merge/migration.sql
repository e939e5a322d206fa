-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN "directMergeBase" TEXT;

