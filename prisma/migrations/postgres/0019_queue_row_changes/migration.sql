-- AlterTable
ALTER TABLE "Queue" ADD COLUMN     "stateToken" TEXT;

-- CreateTable
CREATE TABLE "QueueRowChange" (
    "seq" SERIAL NOT NULL,
    "queueId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "key" TEXT NOT NULL,

    CONSTRAINT "QueueRowChange_pkey" PRIMARY KEY ("seq")
);

-- CreateIndex
CREATE INDEX "QueueRowChange_queueId_idx" ON "QueueRowChange"("queueId");


-- Triggers (hand-written: Prisma does not model them). Every change to a queue's entries, runs
-- and impacted targets is noted, whatever code path makes it, so a decision holding a copy of a
-- queue's rows reads again exactly those that changed (src/store/queue-snapshots.ts).
CREATE FUNCTION "greenline_entry_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (NEW."queueId", 'entry', NEW."prNumber"::text);
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (OLD."queueId", OLD."prNumber") IS DISTINCT FROM (NEW."queueId", NEW."prNumber")) THEN
        INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (OLD."queueId", 'entry', OLD."prNumber"::text);
    END IF;
    RETURN NULL;
END $$;
CREATE FUNCTION "greenline_run_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (NEW."queueId", 'run', NEW."id");
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (OLD."queueId", OLD."id") IS DISTINCT FROM (NEW."queueId", NEW."id")) THEN
        INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (OLD."queueId", 'run', OLD."id");
    END IF;
    RETURN NULL;
END $$;
CREATE FUNCTION "greenline_targets_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (NEW."queueId", 'targets', NEW."prNumber"::text);
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (OLD."queueId", OLD."prNumber") IS DISTINCT FROM (NEW."queueId", NEW."prNumber")) THEN
        INSERT INTO "QueueRowChange" ("queueId", "kind", "key") VALUES (OLD."queueId", 'targets', OLD."prNumber"::text);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER "QueueEntry_changed" AFTER INSERT OR UPDATE OR DELETE ON "QueueEntry" FOR EACH ROW EXECUTE FUNCTION "greenline_entry_changed"();
CREATE TRIGGER "TestRun_changed" AFTER INSERT OR UPDATE OR DELETE ON "TestRun" FOR EACH ROW EXECUTE FUNCTION "greenline_run_changed"();
CREATE TRIGGER "ImpactedTargets_changed" AFTER INSERT OR UPDATE OR DELETE ON "ImpactedTargets" FOR EACH ROW EXECUTE FUNCTION "greenline_targets_changed"();
