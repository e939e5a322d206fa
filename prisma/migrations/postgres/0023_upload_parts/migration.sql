-- CreateTable
CREATE TABLE "TestUploadPart" (
    "organizationId" TEXT NOT NULL,
    "repositoryKey" TEXT NOT NULL,
    "setId" TEXT NOT NULL,
    "index" INTEGER NOT NULL,
    "meta" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "reports" TEXT NOT NULL,
    "receivedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "TestUploadPart_pkey" PRIMARY KEY ("organizationId","repositoryKey","setId","index")
);

-- CreateTable
CREATE TABLE "TestUploadPartSet" (
    "organizationId" TEXT NOT NULL,
    "repositoryKey" TEXT NOT NULL,
    "setId" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "tokenId" TEXT NOT NULL,
    "firstAt" TIMESTAMP(3) NOT NULL,
    "uploadId" TEXT NOT NULL,
    "answer" TEXT,
    "completedAt" TIMESTAMP(3),

    CONSTRAINT "TestUploadPartSet_pkey" PRIMARY KEY ("organizationId","repositoryKey","setId")
);

-- CreateIndex
CREATE INDEX "TestUploadPartSet_completedAt_firstAt_idx" ON "TestUploadPartSet"("completedAt", "firstAt");

