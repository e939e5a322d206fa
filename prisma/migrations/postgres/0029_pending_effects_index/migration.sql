-- The effects not yet carried out, oldest first, for the service metrics (greenline_effects_waiting,
-- greenline_effects_oldest_age_seconds): a partial index, so a scrape never reads the done ones
-- (kept 7 days). Not in the Prisma schema, which cannot say "partial"; nothing else reads it.
CREATE INDEX "Effect_pending_createdAt_idx" ON "Effect"("createdAt") WHERE "doneAt" IS NULL;
