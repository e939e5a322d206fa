-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN     "stateMessage" TEXT;

