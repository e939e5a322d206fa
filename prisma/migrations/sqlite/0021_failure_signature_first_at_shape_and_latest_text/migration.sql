-- AlterTable
ALTER TABLE "FailureSignature" ADD COLUMN "firstAt" BIGINT;
ALTER TABLE "FailureSignature" ADD COLUMN "lastText" TEXT;
ALTER TABLE "FailureSignature" ADD COLUMN "lastUploadKey" INTEGER;
ALTER TABLE "FailureSignature" ADD COLUMN "shape" TEXT;

