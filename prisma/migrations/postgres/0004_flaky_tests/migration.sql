-- CreateTable
CREATE TABLE "FlakySettings" (
    "repositoryId" TEXT NOT NULL,
    "settings" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "FlakySettings_pkey" PRIMARY KEY ("repositoryId")
);

-- CreateTable
CREATE TABLE "CodeOwnersVersion" (
    "repositoryId" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "CodeOwnersVersion_pkey" PRIMARY KEY ("repositoryId")
);

-- CreateTable
CREATE TABLE "TestUpload" (
    "key" SERIAL NOT NULL,
    "id" TEXT NOT NULL,
    "repositoryId" TEXT NOT NULL,
    "commitSha" TEXT NOT NULL,
    "branch" TEXT NOT NULL,
    "prNumber" INTEGER,
    "jobUrl" TEXT,
    "variant" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "testCases" INTEGER NOT NULL,
    "failures" INTEGER NOT NULL,

    CONSTRAINT "TestUpload_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "TestCase" (
    "key" SERIAL NOT NULL,
    "id" TEXT NOT NULL,
    "repositoryId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "file" TEXT NOT NULL,
    "classname" TEXT NOT NULL,
    "parent" TEXT NOT NULL,
    "variant" TEXT NOT NULL,
    "codeowners" TEXT NOT NULL DEFAULT '[]',
    "status" TEXT NOT NULL DEFAULT 'healthy',
    "statusReason" TEXT NOT NULL,
    "statusAt" TIMESTAMP(3) NOT NULL,
    "flakeAt" BIGINT,
    "flakeReason" TEXT,
    "quarantineSetting" TEXT NOT NULL DEFAULT 'auto',
    "quarantined" BOOLEAN NOT NULL DEFAULT false,
    "quarantinedAt" TIMESTAMP(3),
    "ticketUrl" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "TestCase_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "TestResult" (
    "testCaseKey" INTEGER NOT NULL,
    "at" BIGINT NOT NULL,
    "uploadKey" INTEGER NOT NULL,
    "failed" BOOLEAN NOT NULL,
    "passed" BOOLEAN NOT NULL,

    CONSTRAINT "TestResult_pkey" PRIMARY KEY ("testCaseKey","at","uploadKey")
);

-- CreateTable
CREATE TABLE "TestFailure" (
    "repositoryId" TEXT NOT NULL,
    "at" BIGINT NOT NULL,
    "testCaseKey" INTEGER NOT NULL,
    "uploadKey" INTEGER NOT NULL,
    "prNumber" INTEGER,
    "signature" TEXT NOT NULL,

    CONSTRAINT "TestFailure_pkey" PRIMARY KEY ("repositoryId","at","testCaseKey","uploadKey")
);

-- CreateTable
CREATE TABLE "FailureSignature" (
    "testCaseKey" INTEGER NOT NULL,
    "signature" TEXT NOT NULL,
    "summary" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "lastAt" BIGINT NOT NULL,

    CONSTRAINT "FailureSignature_pkey" PRIMARY KEY ("testCaseKey","signature")
);

-- CreateIndex
CREATE UNIQUE INDEX "TestUpload_id_key" ON "TestUpload"("id");

-- CreateIndex
CREATE INDEX "TestUpload_repositoryId_commitSha_idx" ON "TestUpload"("repositoryId", "commitSha");

-- CreateIndex
CREATE INDEX "TestCase_repositoryId_quarantined_idx" ON "TestCase"("repositoryId", "quarantined");

-- CreateIndex
CREATE INDEX "TestCase_repositoryId_status_idx" ON "TestCase"("repositoryId", "status");

-- CreateIndex
CREATE UNIQUE INDEX "TestCase_repositoryId_id_key" ON "TestCase"("repositoryId", "id");

-- CreateIndex
CREATE INDEX "TestFailure_testCaseKey_at_idx" ON "TestFailure"("testCaseKey", "at");

-- CreateIndex
CREATE INDEX "TestFailure_uploadKey_idx" ON "TestFailure"("uploadKey");

-- AddForeignKey
ALTER TABLE "FlakySettings" ADD CONSTRAINT "FlakySettings_repositoryId_fkey" FOREIGN KEY ("repositoryId") REFERENCES "Repository"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "CodeOwnersVersion" ADD CONSTRAINT "CodeOwnersVersion_repositoryId_fkey" FOREIGN KEY ("repositoryId") REFERENCES "Repository"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TestUpload" ADD CONSTRAINT "TestUpload_repositoryId_fkey" FOREIGN KEY ("repositoryId") REFERENCES "Repository"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TestCase" ADD CONSTRAINT "TestCase_repositoryId_fkey" FOREIGN KEY ("repositoryId") REFERENCES "Repository"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TestResult" ADD CONSTRAINT "TestResult_testCaseKey_fkey" FOREIGN KEY ("testCaseKey") REFERENCES "TestCase"("key") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TestResult" ADD CONSTRAINT "TestResult_uploadKey_fkey" FOREIGN KEY ("uploadKey") REFERENCES "TestUpload"("key") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TestFailure" ADD CONSTRAINT "TestFailure_testCaseKey_fkey" FOREIGN KEY ("testCaseKey") REFERENCES "TestCase"("key") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "FailureSignature" ADD CONSTRAINT "FailureSignature_testCaseKey_fkey" FOREIGN KEY ("testCaseKey") REFERENCES "TestCase"("key") ON DELETE CASCADE ON UPDATE CASCADE;

