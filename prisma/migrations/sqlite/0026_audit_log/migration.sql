-- CreateTable
CREATE TABLE "AuditEntry" (
    "seq" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "id" TEXT NOT NULL,
    "organizationId" TEXT NOT NULL,
    "at" DATETIME NOT NULL,
    "actorKind" TEXT NOT NULL,
    "actorName" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "repository" TEXT,
    "branch" TEXT,
    "reason" TEXT,
    "details" TEXT NOT NULL DEFAULT '{}',
    CONSTRAINT "AuditEntry_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE UNIQUE INDEX "AuditEntry_id_key" ON "AuditEntry"("id");

-- CreateIndex
CREATE INDEX "AuditEntry_organizationId_seq_idx" ON "AuditEntry"("organizationId", "seq");

-- CreateIndex
CREATE INDEX "AuditEntry_at_idx" ON "AuditEntry"("at");

