-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN     "failureMessage" TEXT;

