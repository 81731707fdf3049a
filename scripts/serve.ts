// `npm run start:service -- <name>`: one service as its own process (one container each in docker compose).
import { ConfigError, loadConfig, SUBGRAPH_NAMES } from '../platform/runtime/config.js';
import type { HttpService } from '../platform/http/server.js';
import { createEventBus } from '../platform/messaging/event-bus.js';
import { createLogger } from '../platform/runtime/logger.js';
import { ownValue } from '../platform/security/own.js';
import { connectMongo, type Mongo } from '../platform/mongo/mongo.js';
import { start as startGateway } from '../gateway/src/index.js';
import { start as startRestAdapter } from '../rest-adapter/src/index.js';
import { start as startCards } from '../subgraphs/cards/src/index.js';
import { start as startCompliance } from '../subgraphs/compliance/src/index.js';
import { start as startPayments } from '../subgraphs/payments/src/index.js';
import { start as startUser } from '../subgraphs/user/src/index.js';

const SERVICES = [...SUBGRAPH_NAMES, 'gateway', 'rest-adapter'] as const;
const subgraphStarters = { user: startUser, cards: startCards, payments: startPayments, compliance: startCompliance };

async function main(): Promise<void> {
  const name = process.argv[2] ?? process.env.SERVICE;
  if (!name || !(SERVICES as readonly string[]).includes(name)) {
    throw new Error(`Name the service to run: one of ${SERVICES.join(', ')} (argument or SERVICE).`);
  }
  const config = loadConfig();
  if (config.internalSecretGenerated) {
    throw new ConfigError(['INTERNAL_SECRET must be set when services run as separate processes: they must share it.']);
  }
  if (!config.redisUrl && name !== 'rest-adapter') {
    throw new ConfigError(['REDIS_URL must be set when services run as separate processes: events travel between them on Redis.']);
  }
  const logger = createLogger(config.logLevel);
  const bus = createEventBus(config.redisUrl, logger, config.dbPrefix);
  let mongo: Mongo | null = null;
  let service: HttpService;
  if (name === 'gateway') service = await startGateway({ config, logger, bus });
  else if (name === 'rest-adapter') service = await startRestAdapter({ config, logger });
  else {
    const startSubgraph = ownValue(subgraphStarters, name);
    if (!startSubgraph) throw new Error(`Name the service to run: one of ${SERVICES.join(', ')} (argument or SERVICE).`);
    if (!config.mongodbUri) {
      throw new ConfigError(['MONGODB_URI must be set when a subgraph runs on its own (the embedded database is for `npm start`).']);
    }
    mongo = await connectMongo(config.mongodbUri, config.dbPrefix, `banking-graph-${name}`);
    service = await startSubgraph({ config, logger, mongo, bus });
  }
  let stopping = false;
  const stop = async (signal: string) => {
    // A second signal does not wait for the drain: it ends the process at once.
    if (stopping) process.exit(signal === 'SIGINT' ? 130 : 143);
    stopping = true;
    logger.info('shutting down', { signal, drainSeconds: config.drainSeconds });
    await service.drain(config.drainSeconds * 1000);
    await service.close();
    await bus.close();
    await mongo?.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof ConfigError ? error.message : (error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
