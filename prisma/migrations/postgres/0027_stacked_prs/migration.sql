-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN     "stackBelowPr" INTEGER;

