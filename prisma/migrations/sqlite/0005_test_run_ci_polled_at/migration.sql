-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN "ciPolledAt" DATETIME;

