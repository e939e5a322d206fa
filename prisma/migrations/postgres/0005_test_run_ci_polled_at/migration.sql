-- AlterTable
ALTER TABLE "TestRun" ADD COLUMN     "ciPolledAt" TIMESTAMP(3);

