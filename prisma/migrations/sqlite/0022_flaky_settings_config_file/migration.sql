-- AlterTable
ALTER TABLE "FlakySettings" ADD COLUMN "fileError" TEXT;
ALTER TABLE "FlakySettings" ADD COLUMN "fileFields" TEXT;
ALTER TABLE "FlakySettings" ADD COLUMN "fileSha" TEXT;

