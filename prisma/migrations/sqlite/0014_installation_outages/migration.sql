-- CreateTable
CREATE TABLE "InstallationOutage" (
    "accountKey" TEXT NOT NULL PRIMARY KEY,
    "installationId" BIGINT,
    "state" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "since" DATETIME NOT NULL,
    "nextProbeAt" DATETIME NOT NULL,
    "probes" BIGINT NOT NULL DEFAULT 0
);

-- CreateIndex
CREATE INDEX "InstallationOutage_nextProbeAt_idx" ON "InstallationOutage"("nextProbeAt");

