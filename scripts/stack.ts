import { loadConfig, type Config } from '../platform/runtime/config.js';
import { configFor } from '../platform/runtime/config-slices.js';
import { reservePort } from '../platform/mongo/ferretdb.js';
import type { HttpService } from '../platform/http/server.js';
import { createEventBus, type EventBus } from '../platform/messaging/event-bus.js';
import type { Logger } from '../platform/runtime/logger.js';
import type { Mongo } from '../platform/mongo/mongo.js';
import { start as startGateway, type GatewayService } from '../gateway/src/index.js';
import { start as startRestAdapter } from '../rest-adapter/src/index.js';
import { start as startCards } from '../subgraphs/cards/src/index.js';
import { seedCards } from '../subgraphs/cards/src/seed.js';
import { CARDS_MIGRATIONS } from '../subgraphs/cards/src/migrations.js';
import { PAYMENTS_MIGRATIONS } from '../subgraphs/payments/src/migrations.js';
import { COMPLIANCE_MIGRATIONS } from '../subgraphs/compliance/src/migrations.js';
import { applyMigrations } from '../platform/mongo/migrations.js';
import { start as startCompliance } from '../subgraphs/compliance/src/index.js';
import { seedAchDays, seedCompliance } from '../subgraphs/compliance/src/seed.js';
import { start as startPayments } from '../subgraphs/payments/src/index.js';
import { seedAchPayments, seedIous, seedMerchant, seedPayments } from '../subgraphs/payments/src/seed.js';
import { start as startUser } from '../subgraphs/user/src/index.js';
import { seedUser } from '../subgraphs/user/src/seed.js';
import { HTTP_TRANSPORT, InProcessTransport, type Transport } from '../platform/http/transport.js';

/** Loads the demo data into each subgraph's own database. Idempotent. */
export async function seedDemo(mongo: Mongo): Promise<void> {
  // The demo data is written in the shape the migrations leave, so they run first.
  await applyMigrations(mongo.db('cards'), CARDS_MIGRATIONS);
  await applyMigrations(mongo.db('payments'), PAYMENTS_MIGRATIONS);
  await applyMigrations(mongo.db('compliance'), COMPLIANCE_MIGRATIONS);
  const now = new Date();
  await seedUser(mongo.db('user'), now);
  await seedCards(mongo.db('cards'), now);
  await seedPayments(mongo.db('payments'), now);
  await seedAchPayments(mongo.db('payments'), now);
  await seedIous(mongo.db('payments'), now);
  await seedMerchant(mongo.db('payments'), now);
  await seedCompliance(mongo.db('compliance'), now);
  await seedAchDays(mongo.db('compliance'), now);
}

export { openDatabase } from '../platform/mongo/open.js';

/** Configuration that puts every server on a free port (tests, benchmarks). */
export const EVERY_PORT_FREE = {
  GATEWAY_PORT: '0',
  REST_PORT: '0',
  USER_SUBGRAPH_PORT: '0',
  CARDS_SUBGRAPH_PORT: '0',
  PAYMENTS_SUBGRAPH_PORT: '0',
  COMPLIANCE_SUBGRAPH_PORT: '0',
} as const;

/** Every service of one machine, started in one process. */
export interface Stack {
  config: Config;
  mongo: Mongo;
  subgraphs: Subgraphs;
  gateway: GatewayService;
  restAdapter: HttpService;
  /** The event bus the services share: in-process, or Redis where REDIS_URL is set. */
  bus: EventBus;
  /** Turns every service not-ready at once and keeps them answering for `ms` (SIGTERM's drain). */
  drain(ms: number): Promise<void>;
  stop(): Promise<void>;
}

/** The four subgraphs, started. */
export type Subgraphs = Record<'user' | 'cards' | 'payments' | 'compliance', HttpService>;

/**
 * Starts the four subgraphs in this process (each on its configured port, or a free one with port
 * 0); on a failure the ones started are closed again.
 */
export async function startSubgraphs(
  config: Config,
  logger: Logger,
  mongo: Mongo,
  bus: EventBus,
  transport: Transport = HTTP_TRANSPORT,
): Promise<Subgraphs> {
  const started: HttpService[] = [];
  try {
    const user = await startUser({ config: configFor('user', config), logger, mongo, bus, transport });
    started.push(user);
    const cards = await startCards({ config: configFor('cards', config), logger, mongo, bus, transport });
    started.push(cards);
    const payments = await startPayments({ config: configFor('payments', config), logger, mongo, bus, transport });
    started.push(payments);
    const compliance = await startCompliance({ config: configFor('compliance', config), logger, mongo, bus, transport });
    return { user, cards, payments, compliance };
  } catch (error) {
    for (const service of started.reverse()) await service.close();
    throw error;
  }
}

/** The GraphQL URLs of started subgraphs. */
export function subgraphUrlsOf(subgraphs: Subgraphs): Config['subgraphUrls'] {
  return {
    user: `${subgraphs.user.url}/graphql`,
    cards: `${subgraphs.cards.url}/graphql`,
    payments: `${subgraphs.payments.url}/graphql`,
    compliance: `${subgraphs.compliance.url}/graphql`,
  };
}

/**
 * The transports of services started in one process, as IN_PROCESS_CALLS says: `all`, every call
 * between them by a function call; `adapter`, the REST adapter's calls to the gateway only;
 * `none`, HTTP throughout, as between processes.
 */
export function transportsOf(inProcessCalls: Config['inProcessCalls']): { adapter: Transport; gateway: Transport; subgraphs: Transport } {
  const local = new InProcessTransport();
  const outer = inProcessCalls === 'none' ? HTTP_TRANSPORT : local;
  const inner = inProcessCalls === 'all' ? local : HTTP_TRANSPORT;
  // The gateway is offered to the adapter through the outer transport, and calls the subgraphs through the inner one.
  return {
    adapter: outer,
    gateway: { post: (...args) => inner.post(...args), serve: (url, post) => outer.serve(url, post) },
    subgraphs: inner,
  };
}

/**
 * Starts the four subgraphs, then the gateway over their actual URLs, then the REST adapter
 * over the gateway's. With port 0 in the configuration every server takes a free port.
 */
export async function startStack(configured: Config, logger: Logger, mongo: Mongo): Promise<Stack> {
  const started: HttpService[] = [];
  const bus = createEventBus(configured.redisUrl, logger, configured.dbPrefix, configured.eventRetention);
  // Subgraphs call the graph through the gateway, which starts after them: fix its port first, and
  // hold it while they start (their own servers, and other processes, bind free ports meanwhile).
  const reservation = configured.ports.gateway ? null : await reservePort();
  const gatewayPort = configured.ports.gateway || reservation!.port;
  const config: Config = {
    ...configured,
    ports: { ...configured.ports, gateway: gatewayPort },
    gatewayUrl: configured.ports.gateway ? configured.gatewayUrl : `http://127.0.0.1:${gatewayPort}/graphql`,
  };
  try {
    const transports = transportsOf(config.inProcessCalls);
    const subgraphs = await startSubgraphs(config, logger, mongo, bus, transports.subgraphs);
    started.push(subgraphs.user, subgraphs.cards, subgraphs.payments, subgraphs.compliance);
    const subgraphUrls = subgraphUrlsOf(subgraphs);
    await reservation?.release();
    const gateway = await startGateway({
      config: configFor('gateway', { ...config, subgraphUrls }),
      logger,
      bus,
      transport: transports.gateway,
    });
    started.push(gateway);
    const rest = await startRestAdapter({
      config: configFor('rest-adapter', { ...config, subgraphUrls, gatewayUrl: `${gateway.url}/graphql` }),
      logger,
      transport: transports.adapter,
    });
    started.push(rest);
    return {
      config,
      mongo,
      subgraphs,
      gateway,
      restAdapter: rest,
      bus,
      drain: async (ms) => {
        await Promise.all(started.map((service) => service.drain(ms)));
      },
      stop: async () => {
        for (const service of started.reverse()) await service.close();
        await bus.close();
      },
    };
  } catch (error) {
    await reservation?.release().catch(() => {});
    for (const service of started.reverse()) await service.close();
    await bus.close();
    throw error;
  }
}

export { loadConfig };
