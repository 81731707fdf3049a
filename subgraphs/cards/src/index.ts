import { applyMigrations } from '../../../platform/mongo/migrations.js';
import { createGraphClient } from '../../../platform/graphql/graph-client.js';
import type { HttpService } from '../../../platform/http/server.js';
import { Deliveries } from '../../../platform/messaging/deliveries.js';
import { Outbox } from '../../../platform/messaging/outbox.js';
import { startSubgraph, type SubgraphStartOptions } from '../../../platform/graphql/subgraph.js';
import type { ServiceConfig } from '../../../platform/runtime/config-slices.js';
import { withRecurringTask } from '../../../platform/messaging/sweep.js';
import { aggregatorEndpoints } from './webhooks/advice-deliveries.js';
import { createCardsContext } from './context.js';
import { createCardIndexes } from './cards/datasource.js';
import { CardAuthorizer } from './authorization/card-authorizer.js';
import { decisionFollowers } from './authorization/followers.js';
import { cardMessagesCollection, createCardMessageIndexes } from './authorization/datasource.js';
import { RestrictionReadModel } from './authorization/restriction-model.js';
import { AccountFunds } from './authorization/funds.js';
import { resolvers } from './resolvers/index.js';
import { CARDS_LIST_CAPS } from './list-caps.js';
import { CARDS_MIGRATIONS } from './migrations.js';

/** Starts the cards subgraph. */
export async function start(options: SubgraphStartOptions<ServiceConfig<'cards'>>): Promise<HttpService> {
  const db = options.mongo.db('cards');
  // Stored documents take the shape this code reads before anything serves them.
  await applyMigrations(db, CARDS_MIGRATIONS, (message, fields) => options.logger.info(message, fields));
  await createCardIndexes(db);
  await createCardMessageIndexes(db);
  await Deliveries.createIndexes(db);
  const { config } = options;
  const graph = createGraphClient(config, 'cards', options.transport);
  const logger = options.logger.child({ service: 'cards-subgraph' });
  const deliveries = new Deliveries(
    db,
    null,
    logger,
    { scheduleMs: config.webhookRetryScheduleMs, disableAfter: config.webhookDisableAfter, allowInternal: config.webhookAllowInternal },
    aggregatorEndpoints(db),
  );
  // Decided messages are their own outbox: published, their advices enqueued, their transactions sent to payments.
  const messageOutbox = new Outbox(db, [decisionFollowers(options.bus, graph, db, deliveries)], logger, {
    collection: cardMessagesCollection(db).collectionName,
    prune: false,
  });
  const rules = new RestrictionReadModel(options.bus, graph, logger);
  const authorizer = new CardAuthorizer({
    db,
    graph,
    rules,
    funds: new AccountFunds(graph, logger),
    messageOutbox,
    allowInternalWebhooks: config.webhookAllowInternal,
  });
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
  // Advices a crash left unattempted, and retries that are due, go on a timer.
  return withRecurringTask(withTimers, 5000, () => deliveries.retryDue(), logger);
}
