-- CreateTable
CREATE TABLE "TestUploadPart" (
    "organizationId" TEXT NOT NULL,
    "repositoryKey" TEXT NOT NULL,
    "setId" TEXT NOT NULL,
    "index" INTEGER NOT NULL,
    "meta" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "reports" TEXT NOT NULL,
    "receivedAt" DATETIME NOT NULL,

    PRIMARY KEY ("organizationId", "repositoryKey", "setId", "index")
);

-- CreateTable
CREATE TABLE "TestUploadPartSet" (
    "organizationId" TEXT NOT NULL,
    "repositoryKey" TEXT NOT NULL,
    "setId" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "tokenId" TEXT NOT NULL,
    "firstAt" DATETIME NOT NULL,
    "uploadId" TEXT NOT NULL,
    "answer" TEXT,
    "completedAt" DATETIME,

    PRIMARY KEY ("organizationId", "repositoryKey", "setId")
);

-- CreateIndex
CREATE INDEX "TestUploadPartSet_completedAt_firstAt_idx" ON "TestUploadPartSet"("completedAt", "firstAt");

