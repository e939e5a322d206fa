-- AlterTable
ALTER TABLE "ApiToken" ADD COLUMN     "role" TEXT NOT NULL DEFAULT 'write';

