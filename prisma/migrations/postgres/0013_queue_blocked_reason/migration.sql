-- AlterTable
ALTER TABLE "Queue" ADD COLUMN     "blockedReason" TEXT;

