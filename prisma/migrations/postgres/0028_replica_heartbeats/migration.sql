-- CreateTable
CREATE TABLE "ReplicaHeartbeat" (
    "id" TEXT NOT NULL,
    "seenAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ReplicaHeartbeat_pkey" PRIMARY KEY ("id")
);

