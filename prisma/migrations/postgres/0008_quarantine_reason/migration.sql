-- AlterTable
ALTER TABLE "TestCase" ADD COLUMN     "quarantineReason" TEXT;

