-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN     "estimatedMergeAt" TIMESTAMP(3);

