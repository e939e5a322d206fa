-- CreateTable
CREATE TABLE "ReplicaHeartbeat" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "seenAt" DATETIME NOT NULL
);

