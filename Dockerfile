# One image for every service; SERVICE picks which one a container runs.
# Node.js 24, an LTS line supported until April 2028 (Node.js 20 reached its end of life in April 2026).
# Build: the TypeScript compiled to plain JavaScript (npm run build), with the dev dependencies it needs.
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# Run: the built services and the production dependencies only, started with node alone.
FROM node:24-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./
ENV NODE_ENV=production HOST=0.0.0.0
USER node
# Ready: this process can serve (its own database, not draining); see docs/operations.md.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["node", "scripts/healthcheck.js", "ready"]
# Each service with its own Node.js flags (scripts/node-flags.ts), which take precedence over
# NODE_OPTIONS; stack traces in the logs point at the TypeScript sources.
CMD ["sh", "-c", "exec node --enable-source-maps $(node scripts/node-flags.js \"$SERVICE\") scripts/serve.js \"$SERVICE\""]
