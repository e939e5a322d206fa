-- AlterTable
ALTER TABLE "Queue" ADD COLUMN     "checksStartTimeoutMinutes" BIGINT NOT NULL DEFAULT 10;

-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN     "diagnosis" TEXT;

