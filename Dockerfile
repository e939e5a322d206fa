# Greenline's container image. Not built in the project's own workplace (no container registry
# is reachable there): test/deploy/container.test.ts checks offline what can be checked — the
# start command is the README's, the HEALTHCHECK command answers on a real server, compose's
# variables are Greenline's.

# Node.js 24, the later maintained LTS (until April 2028; 22, until April 2027, works too; Node
# 20's support ended in April 2026). The locked better-sqlite3 12.x publishes Node 24 binaries (11.x had none) and builds
# from source with the tools below when none can be fetched. README, "Node.js versions".

# --- build: every dependency (the Prisma CLI generates the clients; TypeScript compiles) ---
FROM node:24-bookworm-slim AS build
# better-sqlite3 compiles from source when no prebuilt binary matches.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# Dependencies first (a layer kept while the lock file is unchanged). Their scripts, and ours
# (postinstall: the Prisma schemas and clients; prepare: the build), run once the sources are
# in: better-sqlite3's is the only dependency script package.json allows (allowScripts).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm rebuild better-sqlite3 \
 && node scripts/prisma.mjs \
 && npm run build \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

# --- runtime: production dependencies only, not root ---
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
# Migrations are read from prisma/migrations and applied at start (src/store/migrate.ts).
COPY --from=build /app/prisma/migrations ./prisma/migrations
# The protobuf schema of Trunk's bundles is loaded at run time (src/flaky/bundle.ts).
COPY --from=build /app/proto ./proto
# The dashboard's own client module and stylesheet (served from their source, hashed at start).
COPY --from=build /app/src/web/assets ./src/web/assets
COPY LICENSE README.md app.yml ./
# The data directory: SQLite's default database (file:./data/greenline.db) and the generated
# session key (without GREENLINE_SESSION_SECRET) live here; mount a volume on it.
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
# The README's start command; it applies pending migrations before serving.
CMD ["node", "dist/src/main.js"]
