-- AlterTable
ALTER TABLE "FlakySettings" ADD COLUMN     "fileError" TEXT,
ADD COLUMN     "fileFields" TEXT,
ADD COLUMN     "fileSha" TEXT;

