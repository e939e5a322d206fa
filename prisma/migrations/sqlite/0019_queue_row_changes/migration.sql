-- AlterTable
ALTER TABLE "Queue" ADD COLUMN "stateToken" TEXT;

-- CreateTable
CREATE TABLE "QueueRowChange" (
    "seq" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "queueId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "key" TEXT NOT NULL
);

-- CreateIndex
CREATE INDEX "QueueRowChange_queueId_idx" ON "QueueRowChange"("queueId");


-- Triggers (hand-written: Prisma does not model them). Every change to a queue's entries, runs
-- and impacted targets is noted, whatever code path makes it, so a decision holding a copy of a
-- queue's rows reads again exactly those that changed (src/store/queue-snapshots.ts).
CREATE TRIGGER "QueueEntry_changed_insert" AFTER INSERT ON "QueueEntry" BEGIN
    INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (NEW."queueId", 'entry', CAST(NEW."prNumber" AS TEXT));
END;
CREATE TRIGGER "QueueEntry_changed_update" AFTER UPDATE ON "QueueEntry" BEGIN
    INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (NEW."queueId", 'entry', CAST(NEW."prNumber" AS TEXT));
    INSERT INTO "QueueRowChange" ("queueId", "kind", "key") SELECT OLD."queueId", 'entry', CAST(OLD."prNumber" AS TEXT) WHERE OLD."queueId" <> NEW."queueId" OR OLD."prNumber" <> NEW."prNumber";
END;
CREATE TRIGGER "QueueEntry_changed_delete" AFTER DELETE ON "QueueEntry" BEGIN
    INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (OLD."queueId", 'entry', CAST(OLD."prNumber" AS TEXT));
END;
CREATE TRIGGER "TestRun_changed_insert" AFTER INSERT ON "TestRun" BEGIN
    INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (NEW."queueId", 'run', NEW."id");
END;
CREATE TRIGGER "TestRun_changed_update" AFTER UPDATE ON "TestRun" BEGIN
    INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (NEW."queueId", 'run', NEW."id");
    INSERT INTO "QueueRowChange" ("queueId", "kind", "key") SELECT OLD."queueId", 'run', OLD."id" WHERE OLD."queueId" <> NEW."queueId" OR OLD."id" <> NEW."id";
END;
CREATE TRIGGER "TestRun_changed_delete" AFTER DELETE ON "TestRun" BEGIN
    INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (OLD."queueId", 'run', OLD."id");
END;
CREATE TRIGGER "ImpactedTargets_changed_insert" AFTER INSERT ON "ImpactedTargets" BEGIN
    INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (NEW."queueId", 'targets', CAST(NEW."prNumber" AS TEXT));
END;
CREATE TRIGGER "ImpactedTargets_changed_update" AFTER UPDATE ON "ImpactedTargets" BEGIN
    INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (NEW."queueId", 'targets', CAST(NEW."prNumber" AS TEXT));
    INSERT INTO "QueueRowChange" ("queueId", "kind", "key") SELECT OLD."queueId", 'targets', CAST(OLD."prNumber" AS TEXT) WHERE OLD."queueId" <> NEW."queueId" OR OLD."prNumber" <> NEW."prNumber";
END;
CREATE TRIGGER "ImpactedTargets_changed_delete" AFTER DELETE ON "ImpactedTargets" BEGIN
    INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (OLD."queueId", 'targets', CAST(OLD."prNumber" AS TEXT));
END;
