-- AlterTable
ALTER TABLE "Queue" ADD COLUMN     "freezes" TEXT NOT NULL DEFAULT '[]',
ADD COLUMN     "frozenState" TEXT;

-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN     "hotfixReason" TEXT;

