# One image for every service; SERVICE picks which one a container runs.
# Build: the TypeScript compiled to plain JavaScript (npm run build), with the dev dependencies it needs.
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# Run: the built services and the production dependencies only, started with node alone.
FROM node:20-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./
# The services' Node.js flags (scripts/node-flags.ts), as an environment variable an operator can override.
ENV NODE_ENV=production HOST=0.0.0.0 NODE_OPTIONS="--max-semi-space-size=64"
USER node
CMD ["sh", "-c", "exec node scripts/serve.js \"$SERVICE\""]
