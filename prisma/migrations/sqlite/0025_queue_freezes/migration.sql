-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN "emergencyReason" TEXT;

-- AlterTable (added in place: SQLite adds a NOT NULL column with a constant default without rebuilding the table)
ALTER TABLE "Queue" ADD COLUMN "freezes" TEXT NOT NULL DEFAULT '[]';
ALTER TABLE "Queue" ADD COLUMN "frozenState" TEXT;
ALTER TABLE "Queue" ADD COLUMN "pullRequestChecks" TEXT NOT NULL DEFAULT '[]';
