-- AlterTable (hand-written: columns added in place rather than the table rebuilt, which a
-- queue table with many rows would pay for; Prisma reads the columns by name)
ALTER TABLE "Queue" ADD COLUMN "ciBudget" BIGINT NOT NULL DEFAULT 0;
ALTER TABLE "Queue" ADD COLUMN "tuning" TEXT NOT NULL DEFAULT 'fixed';
ALTER TABLE "Queue" ADD COLUMN "observedFailures" REAL NOT NULL DEFAULT 0;
ALTER TABLE "Queue" ADD COLUMN "observedExposures" REAL NOT NULL DEFAULT 0;
