-- AlterTable
ALTER TABLE "FailureSignature" ADD COLUMN "firstAt" BIGINT;
ALTER TABLE "FailureSignature" ADD COLUMN "shape" TEXT;

