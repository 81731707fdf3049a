// `npm run start:service -- <name>`: one service as its own process (one container each in docker compose).
import { ConfigError, loadConfig, SUBGRAPH_NAMES, type Config } from '../platform/runtime/config.js';
import { configFor } from '../platform/runtime/config-slices.js';
import type { HttpService } from '../platform/http/server.js';
import type { EventBus } from '../platform/messaging/event-bus.js';
import type { Mongo } from '../platform/mongo/mongo.js';
import { createLogger, type Logger } from '../platform/runtime/logger.js';
import { startObservability } from '../platform/telemetry/observe.js';

const SERVICES = [...SUBGRAPH_NAMES, 'gateway', 'rest-adapter'] as const;

/**
 * Starts the one service named, importing its module alone (a subgraph's process loads no
 * gateway), once tracing is registered: Apollo's gateway takes its tracer as it loads.
 */
async function startService(
  name: (typeof SERVICES)[number],
  config: Config,
  logger: Logger,
  bus: EventBus,
  mongo: () => Promise<Mongo>,
): Promise<HttpService> {
  switch (name) {
    case 'gateway':
      return (await import('../gateway/src/index.js')).start({ config: configFor(name, config), logger, bus });
    case 'rest-adapter':
      return (await import('../rest-adapter/src/index.js')).start({ config: configFor(name, config), logger });
    case 'user':
      return (await import('../subgraphs/user/src/index.js')).start({ config: configFor(name, config), logger, bus, mongo: await mongo() });
    case 'cards':
      return (await import('../subgraphs/cards/src/index.js')).start({
        config: configFor(name, config),
        logger,
        bus,
        mongo: await mongo(),
      });
    case 'payments':
      return (await import('../subgraphs/payments/src/index.js')).start({
        config: configFor(name, config),
        logger,
        bus,
        mongo: await mongo(),
      });
    case 'compliance':
      return (await import('../subgraphs/compliance/src/index.js')).start({
        config: configFor(name, config),
        logger,
        bus,
        mongo: await mongo(),
      });
  }
}

async function main(): Promise<void> {
  const name = SERVICES.find((service) => service === (process.argv[2] ?? process.env.SERVICE));
  if (!name) throw new Error(`Name the service to run: one of ${SERVICES.join(', ')} (argument or SERVICE).`);
  const config = loadConfig();
  if (config.internalSecretGenerated) {
    throw new ConfigError(['INTERNAL_SECRET must be set when services run as separate processes: they must share it.']);
  }
  if (!config.redisUrl && name !== 'rest-adapter') {
    throw new ConfigError(['REDIS_URL must be set when services run as separate processes: events travel between them on Redis.']);
  }
  const { mongodbUri } = config;
  if (!mongodbUri && (SUBGRAPH_NAMES as readonly string[]).includes(name)) {
    throw new ConfigError(['MONGODB_URI must be set when a subgraph runs on its own (the embedded database is for `npm start`).']);
  }
  const logger = createLogger(config.logLevel);
  const observability = await startObservability(config, name, logger);
  const { createEventBus } = await import('../platform/messaging/event-bus.js');
  const bus = createEventBus(config.redisUrl, logger, config.dbPrefix, config.eventRetention);
  let mongo: Mongo | null = null;
  const service = await startService(name, config, logger, bus, async () => {
    const { connectMongo } = await import('../platform/mongo/mongo.js');
    mongo = await connectMongo(mongodbUri!, config.dbPrefix, `banking-graph-${name}`);
    return mongo;
  });
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
  process.stderr.write(`${error instanceof ConfigError ? error.message : ((error as Error).stack ?? String(error))}\n`);
  process.exit(1);
});
