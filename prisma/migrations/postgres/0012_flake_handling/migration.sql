-- AlterTable
ALTER TABLE "Queue" ADD COLUMN     "flakeHandling" TEXT NOT NULL DEFAULT 'quarantined',
ADD COLUMN     "flakyRetries" BIGINT NOT NULL DEFAULT 1;

-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN     "flakeVerdict" TEXT;

-- AlterTable
ALTER TABLE "TestUpload" ADD COLUMN     "checkName" TEXT,
ADD COLUMN     "checkRunId" BIGINT;

