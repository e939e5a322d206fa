-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "Organization" (
    "id" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Organization_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ApiToken" (
    "id" TEXT NOT NULL,
    "organizationId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "tokenHash" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revokedAt" TIMESTAMP(3),

    CONSTRAINT "ApiToken_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Installation" (
    "id" BIGINT NOT NULL,
    "organizationId" TEXT NOT NULL,
    "accountLogin" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Installation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Repository" (
    "id" TEXT NOT NULL,
    "organizationId" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Repository_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Queue" (
    "id" TEXT NOT NULL,
    "repositoryId" TEXT NOT NULL,
    "branch" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "pendingMode" TEXT,
    "concurrency" BIGINT NOT NULL,
    "bisectionConcurrency" BIGINT NOT NULL,
    "testingTimeoutMinutes" BIGINT NOT NULL,
    "pendingFailureDepth" BIGINT NOT NULL,
    "canOptimisticallyMerge" BOOLEAN NOT NULL,
    "batch" BOOLEAN NOT NULL,
    "batchingMaxWaitTimeMinutes" BIGINT NOT NULL,
    "batchingMinSize" BIGINT NOT NULL,
    "commentsEnabled" BOOLEAN NOT NULL,
    "commandsEnabled" BOOLEAN NOT NULL,
    "createPrsForTestingBranches" BOOLEAN NOT NULL,
    "statusCheckEnabled" BOOLEAN NOT NULL,
    "requiredStatuses" TEXT,
    "directMergeMode" TEXT NOT NULL,
    "optimizationMode" TEXT NOT NULL,
    "mergeMethod" TEXT NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Queue_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "QueueEntry" (
    "id" TEXT NOT NULL,
    "queueId" TEXT NOT NULL,
    "prNumber" INTEGER NOT NULL,
    "prTitle" TEXT NOT NULL,
    "prSha" TEXT NOT NULL,
    "prBaseBranch" TEXT NOT NULL,
    "prAuthor" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "stateChangedAt" TIMESTAMP(3) NOT NULL,
    "stateReason" TEXT NOT NULL,
    "priorityValue" INTEGER NOT NULL,
    "priorityName" TEXT NOT NULL,
    "usedDefaultPriorityName" TEXT,
    "noBatch" BOOLEAN NOT NULL,
    "forceEnqueued" BOOLEAN NOT NULL DEFAULT false,
    "isCurrentlySubmitted" BOOLEAN NOT NULL,
    "mergeability" TEXT NOT NULL,
    "submittedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "QueueEntry_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ImpactedTargets" (
    "queueId" TEXT NOT NULL,
    "prNumber" INTEGER NOT NULL,
    "sha" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "targets" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ImpactedTargets_pkey" PRIMARY KEY ("queueId","prNumber")
);

-- CreateTable
CREATE TABLE "Transition" (
    "id" TEXT NOT NULL,
    "entryId" TEXT NOT NULL,
    "queueId" TEXT NOT NULL,
    "fromState" TEXT,
    "toState" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Transition_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "Organization_slug_key" ON "Organization"("slug");

-- CreateIndex
CREATE UNIQUE INDEX "ApiToken_tokenHash_key" ON "ApiToken"("tokenHash");

-- CreateIndex
CREATE INDEX "ApiToken_organizationId_idx" ON "ApiToken"("organizationId");

-- CreateIndex
CREATE INDEX "Installation_organizationId_idx" ON "Installation"("organizationId");

-- CreateIndex
CREATE UNIQUE INDEX "Repository_key_key" ON "Repository"("key");

-- CreateIndex
CREATE INDEX "Repository_organizationId_idx" ON "Repository"("organizationId");

-- CreateIndex
CREATE UNIQUE INDEX "Queue_repositoryId_branch_key" ON "Queue"("repositoryId", "branch");

-- CreateIndex
CREATE INDEX "QueueEntry_queueId_state_idx" ON "QueueEntry"("queueId", "state");

-- CreateIndex
CREATE INDEX "QueueEntry_queueId_priorityValue_submittedAt_idx" ON "QueueEntry"("queueId", "priorityValue", "submittedAt");

-- CreateIndex
CREATE UNIQUE INDEX "QueueEntry_queueId_prNumber_key" ON "QueueEntry"("queueId", "prNumber");

-- CreateIndex
CREATE INDEX "Transition_entryId_at_idx" ON "Transition"("entryId", "at");

-- CreateIndex
CREATE INDEX "Transition_queueId_at_idx" ON "Transition"("queueId", "at");

-- AddForeignKey
ALTER TABLE "ApiToken" ADD CONSTRAINT "ApiToken_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Installation" ADD CONSTRAINT "Installation_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Repository" ADD CONSTRAINT "Repository_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Queue" ADD CONSTRAINT "Queue_repositoryId_fkey" FOREIGN KEY ("repositoryId") REFERENCES "Repository"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "QueueEntry" ADD CONSTRAINT "QueueEntry_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ImpactedTargets" ADD CONSTRAINT "ImpactedTargets_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Transition" ADD CONSTRAINT "Transition_entryId_fkey" FOREIGN KEY ("entryId") REFERENCES "QueueEntry"("id") ON DELETE CASCADE ON UPDATE CASCADE;

