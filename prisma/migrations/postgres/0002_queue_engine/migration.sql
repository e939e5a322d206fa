-- AlterTable
ALTER TABLE "Queue" ADD COLUMN     "baseSha" TEXT,
ADD COLUMN     "mergedPrs" TEXT NOT NULL DEFAULT '[]',
ADD COLUMN     "nextRunNumber" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "targetHead" TEXT,
ADD COLUMN     "timerAt" TIMESTAMP(3);

-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN     "bisectionGroupLimit" INTEGER,
ADD COLUMN     "linePosition" BIGINT,
ADD COLUMN     "ready" BOOLEAN NOT NULL DEFAULT true;

-- CreateTable
CREATE TABLE "TestRun" (
    "id" TEXT NOT NULL,
    "queueId" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "baseSha" TEXT NOT NULL,
    "stack" TEXT NOT NULL,
    "tested" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "failure" TEXT,
    "startedAt" TIMESTAMP(3) NOT NULL,
    "finishedAt" TIMESTAMP(3),
    "testBranch" TEXT,
    "testBranchSha" TEXT,
    "archived" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "TestRun_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Effect" (
    "id" TEXT NOT NULL,
    "queueId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "kind" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "doneAt" TIMESTAMP(3),
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lastError" TEXT,

    CONSTRAINT "Effect_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "QueueEvent" (
    "id" TEXT NOT NULL,
    "queueId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "QueueEvent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SandboxCommit" (
    "sha" TEXT NOT NULL,
    "repoKey" TEXT NOT NULL,
    "parentSha" TEXT,
    "tree" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "SandboxCommit_pkey" PRIMARY KEY ("sha")
);

-- CreateTable
CREATE TABLE "SandboxRef" (
    "repoKey" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "sha" TEXT NOT NULL,

    CONSTRAINT "SandboxRef_pkey" PRIMARY KEY ("repoKey","name")
);

-- CreateTable
CREATE TABLE "SandboxPullRequest" (
    "repoKey" TEXT NOT NULL,
    "number" INTEGER NOT NULL,
    "title" TEXT NOT NULL,
    "author" TEXT NOT NULL,
    "baseBranch" TEXT NOT NULL,
    "baseSha" TEXT NOT NULL,
    "headSha" TEXT NOT NULL,
    "patch" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "broken" BOOLEAN NOT NULL,

    CONSTRAINT "SandboxPullRequest_pkey" PRIMARY KEY ("repoKey","number")
);

-- CreateTable
CREATE TABLE "SandboxCiJob" (
    "id" TEXT NOT NULL,
    "queueId" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "sha" TEXT NOT NULL,
    "dueAt" TIMESTAMP(3) NOT NULL,
    "outcome" TEXT NOT NULL,
    "deliveredAt" TIMESTAMP(3),

    CONSTRAINT "SandboxCiJob_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "TestRun_queueId_archived_idx" ON "TestRun"("queueId", "archived");

-- CreateIndex
CREATE UNIQUE INDEX "TestRun_queueId_runId_key" ON "TestRun"("queueId", "runId");

-- CreateIndex
CREATE INDEX "Effect_queueId_doneAt_idx" ON "Effect"("queueId", "doneAt");

-- CreateIndex
CREATE UNIQUE INDEX "Effect_queueId_seq_key" ON "Effect"("queueId", "seq");

-- CreateIndex
CREATE INDEX "QueueEvent_queueId_at_idx" ON "QueueEvent"("queueId", "at");

-- CreateIndex
CREATE INDEX "SandboxCommit_repoKey_idx" ON "SandboxCommit"("repoKey");

-- CreateIndex
CREATE INDEX "SandboxCiJob_deliveredAt_dueAt_idx" ON "SandboxCiJob"("deliveredAt", "dueAt");

-- AddForeignKey
ALTER TABLE "TestRun" ADD CONSTRAINT "TestRun_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Effect" ADD CONSTRAINT "Effect_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "QueueEvent" ADD CONSTRAINT "QueueEvent_queueId_fkey" FOREIGN KEY ("queueId") REFERENCES "Queue"("id") ON DELETE CASCADE ON UPDATE CASCADE;

