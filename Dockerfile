# One image for every service; SERVICE picks which one a container runs.
FROM node:20-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
ENV NODE_ENV=production HOST=0.0.0.0
USER node
CMD ["sh", "-c", "exec npx tsx --max-semi-space-size=64 scripts/serve.ts \"$SERVICE\""]
