import { applyMigrations } from '../../../platform/mongo/migrations.js';
import { createGraphClient } from '../../../platform/graphql/graph-client.js';
import type { HttpService } from '../../../platform/http/server.js';
import { Deliveries } from '../../../platform/messaging/deliveries.js';
import { Outbox } from '../../../platform/messaging/outbox.js';
import { startSubgraph, withRecurringTask, type SubgraphStartOptions } from '../../../platform/graphql/subgraph.js';
import { aggregatorEndpoints } from './webhooks/advice-deliveries.js';
import { createCardsContext } from './context.js';
import { createCardIndexes } from './cards/datasource.js';
import { CardAuthorizer, decisionFollowers } from './authorization/card-authorizer.js';
import { cardMessagesCollection, createCardMessageIndexes } from './authorization/datasource.js';
import { RestrictionReadModel } from './authorization/restriction-model.js';
import { createSpendingIndexes, SpendingBalances } from './authorization/spending.js';
import { resolvers } from './resolvers/index.js';
import { CARDS_LIST_CAPS } from './list-caps.js';
import { CARDS_MIGRATIONS } from './migrations.js';

/** How often the spending balances are checked for what interrupted decisions took, and how long such a take is left first. */
const RECONCILE_MS = 60_000;

/** Starts the cards subgraph. */
export async function start(options: SubgraphStartOptions): Promise<HttpService> {
  const db = options.mongo.db('cards');
  // Stored documents take the shape this code reads before anything serves them.
  await applyMigrations(db, CARDS_MIGRATIONS, (message, fields) => options.logger.info(message, fields));
  await createCardIndexes(db);
  await createCardMessageIndexes(db);
  await createSpendingIndexes(db);
  await Deliveries.createIndexes(db);
  const { config } = options;
  const graph = createGraphClient(config, 'cards', options.transport);
  const logger = options.logger.child({ service: 'cards-subgraph' });
  const deliveries = new Deliveries(db, null, logger, { scheduleMs: config.webhookRetryScheduleMs, disableAfter: config.webhookDisableAfter, allowInternal: config.webhookAllowInternal }, aggregatorEndpoints(db));
  const spending = new SpendingBalances(db, graph, { overdraftLimit: config.cardOverdraftLimit, holdExpirySeconds: config.cardHoldExpirySeconds }, logger);
  // Decided messages are their own outbox: published, their advices enqueued, their transactions sent to payments.
  const messageOutbox = new Outbox(db, [decisionFollowers(options.bus, graph, db, deliveries, spending)], logger, { collection: cardMessagesCollection(db).collectionName, prune: false });
  const rules = new RestrictionReadModel(options.bus, graph, logger);
  const authorizer = new CardAuthorizer({ db, graph, rules, spending, messageOutbox, allowInternalWebhooks: config.webhookAllowInternal });
  const service = await startSubgraph({
    ...options,
    name: 'cards',
    resolvers,
    listCaps: CARDS_LIST_CAPS,
    createContext: (base) => createCardsContext(base, db, graph, config, deliveries, authorizer),
  });
  messageOutbox.start();
  rules.start();
  const withTimers = {
    ...service,
    close: async () => {
      deliveries.close();
      await service.close();
      await Promise.all([messageOutbox.stop(), rules.stop()]);
    },
  };
  // Advices a crash left unattempted, and retries that are due, go on a timer; so do expired holds, within a quarter of their period (at most 30 s).
  const holdSweepMs = Math.min(30_000, Math.max(250, (config.cardHoldExpirySeconds * 1000) / 4));
  const withHolds = withRecurringTask(withRecurringTask(withTimers, 5000, () => deliveries.retryDue(), logger), holdSweepMs, () => spending.expire(), logger);
  // What an interrupted decision took goes back once a pass a minute after the first still finds no approved message.
  return withRecurringTask(withHolds, RECONCILE_MS, () => spending.reconcile(RECONCILE_MS), logger);
}
