// `npm run start:service -- <name>`: one service as its own process (one container each in docker compose).
import { ConfigError, loadConfig, SUBGRAPH_NAMES } from '../platform/runtime/config.js';
import type { HttpService } from '../platform/http/server.js';
import type { Mongo } from '../platform/mongo/mongo.js';
import { createLogger } from '../platform/runtime/logger.js';
import { startObservability } from '../platform/telemetry/observe.js';
import { ownValue } from '../platform/security/own.js';

const SERVICES = [...SUBGRAPH_NAMES, 'gateway', 'rest-adapter'] as const;

/** The services' modules, loaded once tracing is registered: Apollo's gateway takes its tracer as it loads. */
const servicesLoaded = async () => {
  const [{ createEventBus }, { connectMongo }, gateway, restAdapter, cards, compliance, payments, user] = await Promise.all([
    import('../platform/messaging/event-bus.js'),
    import('../platform/mongo/mongo.js'),
    import('../gateway/src/index.js'),
    import('../rest-adapter/src/index.js'),
    import('../subgraphs/cards/src/index.js'),
    import('../subgraphs/compliance/src/index.js'),
    import('../subgraphs/payments/src/index.js'),
    import('../subgraphs/user/src/index.js'),
  ]);
  return { createEventBus, connectMongo, startGateway: gateway.start, startRestAdapter: restAdapter.start, subgraphStarters: { user: user.start, cards: cards.start, payments: payments.start, compliance: compliance.start } };
};

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
  const observability = await startObservability(config, name, logger);
  const { createEventBus, connectMongo, startGateway, startRestAdapter, subgraphStarters } = await servicesLoaded();
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
    await observability.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof ConfigError ? error.message : (error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
