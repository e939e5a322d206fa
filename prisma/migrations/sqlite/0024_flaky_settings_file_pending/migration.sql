-- AlterTable
ALTER TABLE "FlakySettings" ADD COLUMN "filePending" TEXT;

