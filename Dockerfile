# cohort: Kafka-style consumer groups and delayed operations as a gRPC service.
#   docker build -t cohort .
#   docker run --rm -v cohort-data:/var/lib/cohort cohort
# docs/operations.md explains the settings, the probes and the shutdown this image relies on.

ARG NODE_IMAGE=node:20-slim

# --- build: every dependency, then the TypeScript compiler -------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# Dependencies first: the layer is reused until package.json or the lockfile change.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY . .
RUN npm run build

# --- runtime: production dependencies, the compiled server and the contract ---------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    COHORT_DATA_DIR=/var/lib/cohort
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
# The server finds proto/ by walking up from dist/src/server, so both sit under /app.
COPY --from=build /app/dist/src ./dist/src
COPY proto ./proto
RUN mkdir -p /var/lib/cohort && chown node:node /var/lib/cohort
USER node
VOLUME ["/var/lib/cohort"]
# gRPC and the admin listener (/healthz, /readyz, /metrics). Both listen on loopback unless COHORT_LISTEN
# and COHORT_ADMIN_LISTEN say otherwise: a sidecar is reached from its own pod. A reachable COHORT_LISTEN
# needs COHORT_TOKEN (or --token-file) or TLS, or COHORT_INSECURE=true.
EXPOSE 7070 7071
# The bundled probe asks the admin listener's /readyz where COHORT_ADMIN_LISTEN says it listens (loopback
# inside the container by default): plain HTTP, so it works whatever TLS, mutual TLS, certificate names
# and tokens the gRPC listener has. It exits 0 only when ready (not while group state loads, nor while
# draining, nor while a cluster node is not registered in etcd). With COHORT_ADMIN_LISTEN=off it asks the gRPC
# health service where COHORT_LISTEN says instead (mutual TLS then needs a HEALTHCHECK with --tls-cert).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "dist/src/health-probe.js", "--readyz", "--timeout-ms", "4000"]
# Exec form: node is PID 1 and receives docker stop's SIGTERM itself, so it drains and exits 0.
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js"]
