# One image for every service; SERVICE picks which one a container runs.
FROM node:20-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# The services' Node.js flags (scripts/node-flags.ts), as an environment variable an operator can override.
ENV NODE_ENV=production HOST=0.0.0.0 NODE_OPTIONS="--max-semi-space-size=64"
USER node
CMD ["sh", "-c", "exec npx tsx scripts/serve.ts \"$SERVICE\""]
