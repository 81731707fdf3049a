import { applyMigrations } from '../../../platform/mongo/migrations.js';
import type { HttpService } from '../../../platform/http/server.js';
import { createGraphClient } from '../../../platform/graphql/graph-client.js';
import { startSubgraph, type SubgraphStartOptions } from '../../../platform/graphql/subgraph.js';
import type { ServiceConfig } from '../../../platform/runtime/config-slices.js';
import { withRecurringTask } from '../../../platform/messaging/sweep.js';
import { createNotifier } from '../../../platform/messaging/notify.js';
import { backgroundAuditTrail } from '../../../platform/messaging/audit.js';
import { expireCardHolds } from './accounts/card-holds.js';
import { createAccountIndexes } from './accounts/datasource.js';
import { createTransactionIndexes, ensureAccountMonths, transactionsCollection } from './accounts/transactions-datasource.js';
import { achForwarder } from './ach/ach-ledger.js';
import { createAchPaymentIndexes } from './ach/datasource.js';
import { createBeneficiaryIndexes } from './beneficiaries/datasource.js';
import { createPaymentsContext } from './context.js';
import { createFundsIndexes } from './funds/datasource.js';
import { createIouIndexes } from './ious/datasource.js';
import { createMerchantIndexes } from './merchants/datasource.js';
import { Deliveries, merchantEndpoints } from './merchants/deliveries.js';
import { createPaymentLinkIndexes } from './payment-links/datasource.js';
import { PaymentLinks } from './payment-links/payment-links.js';
import { resolvers } from './resolvers/index.js';
import { PAYMENTS_LIST_CAPS } from './list-caps.js';
import { PAYMENTS_MIGRATIONS } from './migrations.js';

/** Starts the payments subgraph. */
export async function start(options: SubgraphStartOptions<ServiceConfig<'payments'>>): Promise<HttpService> {
  const { config } = options;
  const db = options.mongo.db('payments');
  // Stored documents take the shape this code reads before anything serves them.
  await applyMigrations(db, PAYMENTS_MIGRATIONS, (message, fields) => options.logger.info(message, fields));
  await createAccountIndexes(db);
  await createTransactionIndexes(db);
  await createBeneficiaryIndexes(db);
  await createAchPaymentIndexes(db);
  await createIouIndexes(db);
  await createFundsIndexes(db);
  await createMerchantIndexes(db);
  await createPaymentLinkIndexes(db);
  const backfilled = await ensureAccountMonths(transactionsCollection(db));
  await Deliveries.createIndexes(db);
  const logger = options.logger.child({ service: 'payments-subgraph' });
  if (backfilled > 0) logger.info('transactions given their accountMonth', { count: backfilled });
  const graph = createGraphClient(config, 'payments', options.transport);
  const notifier = createNotifier({
    smtpUrl: config.smtpUrl,
    mailFrom: config.mailFrom,
    smsWebhookUrl: config.smsWebhookUrl,
    outboxDir: config.outboxDir,
    logger,
  });
  const deliveries = new Deliveries(
    db,
    notifier,
    logger,
    { scheduleMs: config.webhookRetryScheduleMs, disableAfter: config.webhookDisableAfter, allowInternal: config.webhookAllowInternal },
    merchantEndpoints(db),
  );
  const cardHolds = { overdraftLimit: config.cardOverdraftLimit, expirySeconds: config.cardHoldExpirySeconds };
  const links = { jwtSecret: config.jwtSecret, paymentPageUrl: config.paymentPageUrl, lifetimeSeconds: config.paymentLinkLifetimeSeconds };
  const service = await startSubgraph({
    ...options,
    name: 'payments',
    resolvers,
    listCaps: PAYMENTS_LIST_CAPS,
    dispatchers: [achForwarder(graph)],
    createContext: (base) =>
      createPaymentsContext(base, { db, deliveries, graph, links, allowInternalWebhooks: config.webhookAllowInternal, cardHolds }),
  });
  const expiry = new PaymentLinks(db, deliveries, links, logger, backgroundAuditTrail(db, logger));
  // Deliveries that are due a retry, and links past their expiry, go on a timer.
  const withTimers = {
    ...service,
    close: async () => {
      deliveries.close();
      await service.close();
    },
  };
  const withDeliveries = withRecurringTask(
    withTimers,
    5000,
    () => Promise.allSettled([deliveries.retryDue(), expiry.expireDue(), expiry.repairDeliveries()]),
    logger,
  );
  // Expired card holds go back within a quarter of their period (at most 30 s after they expire).
  const holdSweepMs = Math.min(30_000, Math.max(250, (config.cardHoldExpirySeconds * 1000) / 4));
  return withRecurringTask(withDeliveries, holdSweepMs, () => expireCardHolds(db), logger);
}
