-- AlterTable
ALTER TABLE "Queue" ADD COLUMN     "freezes" TEXT NOT NULL DEFAULT '[]',
ADD COLUMN     "frozenState" TEXT,
ADD COLUMN     "pullRequestChecks" TEXT NOT NULL DEFAULT '[]';

-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN     "emergencyReason" TEXT;

