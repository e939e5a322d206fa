-- CreateTable
CREATE TABLE "InstallationOutage" (
    "accountKey" TEXT NOT NULL,
    "installationId" BIGINT,
    "state" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "since" TIMESTAMP(3) NOT NULL,
    "nextProbeAt" TIMESTAMP(3) NOT NULL,
    "probes" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "InstallationOutage_pkey" PRIMARY KEY ("accountKey")
);

-- CreateIndex
CREATE INDEX "InstallationOutage_nextProbeAt_idx" ON "InstallationOutage"("nextProbeAt");

