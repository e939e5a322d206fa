-- AlterTable
ALTER TABLE "FailureSignature" ADD COLUMN     "firstAt" BIGINT,
ADD COLUMN     "shape" TEXT;

