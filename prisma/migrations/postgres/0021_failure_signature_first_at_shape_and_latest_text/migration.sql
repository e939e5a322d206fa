-- AlterTable
ALTER TABLE "FailureSignature" ADD COLUMN     "firstAt" BIGINT,
ADD COLUMN     "lastText" TEXT,
ADD COLUMN     "lastUploadKey" INTEGER,
ADD COLUMN     "shape" TEXT;

