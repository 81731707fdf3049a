import { backgroundAuditTrail } from '../../../platform/security/audit.js';
import type { HttpService } from '../../../platform/http/server.js';
import { createGraphClient } from '../../../platform/graphql/graph-client.js';
import { createNotifier } from '../../../platform/messaging/notify.js';
import { startSubgraph, withRecurringTask, type SubgraphStartOptions } from '../../../platform/graphql/subgraph.js';
import { achForwarder } from './ach.js';
import { createPaymentsContext } from './context.js';
import { achPaymentsCollection } from './datasources/ach.js';
import { accountsCollection } from './datasources/accounts.js';
import { beneficiariesCollection, beneficiaryUndosCollection } from './datasources/beneficiaries.js';
import { fundsTransactionsCollection } from './datasources/funds.js';
import { iouAccountsCollection, iouTransactionsCollection } from './datasources/ious.js';
import { merchantsCollection } from './datasources/merchants.js';
import { paymentLinksCollection, refundsCollection } from './datasources/payment-links.js';
import { ensureAccountMonths, transactionsCollection } from './datasources/transactions.js';
import { Deliveries, deliveriesCollection, merchantEndpoints } from './deliveries.js';
import { PaymentLinks } from './payment-links.js';
import { resolvers } from './resolvers/index.js';

/** Starts the payments subgraph. */
export async function start(options: SubgraphStartOptions): Promise<HttpService> {
  const { config } = options;
  const db = options.mongo.db('payments');
  await accountsCollection(db).createIndex({ SvcUserId: 1 });
  await transactionsCollection(db).createIndex({ SvcAccountId: 1, dtsValue: -1, _id: -1 });
  const backfilled = await ensureAccountMonths(transactionsCollection(db));
  await beneficiariesCollection(db).createIndex({ SvcUserId: 1 });
  await beneficiaryUndosCollection(db).createIndex({ SvcBeneficiaryId: 1 });
  await achPaymentsCollection(db).createIndex({ svcAggregatorId: 1, effectiveEntryDate: 1 });
  await iouAccountsCollection(db).createIndex({ SvcUserId: 1, otherSvcUserId: 1 });
  await iouAccountsCollection(db).createIndex({ otherSvcUserId: 1 });
  await iouTransactionsCollection(db).createIndex({ IOUAccountId: 1, dts: 1 });
  await fundsTransactionsCollection(db).createIndex({ svcAggregatorId: 1, reference: 1 });
  await fundsTransactionsCollection(db).createIndex({ svcAggregatorId: 1, arn: 1 });
  await merchantsCollection(db).createIndex({ svcAggregatorId: 1 });
  await paymentLinksCollection(db).createIndex({ svcMerchantId: 1, dtsCreatedAt: -1 });
  await paymentLinksCollection(db).createIndex({ link: 1 });
  await paymentLinksCollection(db).createIndex({ status: 1, dtsExpiredAt: 1 });
  await refundsCollection(db).createIndex({ svcAggregatorId: 1, dtsCreatedAt: -1 });
  await Deliveries.createIndexes(db);
  const logger = options.logger.child({ service: 'payments-subgraph' });
  if (backfilled > 0) logger.info('transactions given their accountMonth', { count: backfilled });
  const graph = createGraphClient(config, 'payments');
  const notifier = createNotifier({ smtpUrl: config.smtpUrl, mailFrom: config.mailFrom, smsWebhookUrl: config.smsWebhookUrl, outboxDir: config.outboxDir, logger });
  const deliveries = new Deliveries(db, notifier, logger, { scheduleMs: config.webhookRetryScheduleMs, disableAfter: config.webhookDisableAfter, allowInternal: config.webhookAllowInternal }, merchantEndpoints(db));
  const links = { jwtSecret: config.jwtSecret, paymentPageUrl: config.paymentPageUrl, lifetimeSeconds: config.paymentLinkLifetimeSeconds };
  const service = await startSubgraph({
    ...options,
    name: 'payments',
    resolvers,
    dispatchers: [achForwarder(graph)],
    createContext: (base) => createPaymentsContext(base, { db, deliveries, graph, links, allowInternalWebhooks: config.webhookAllowInternal }),
  });
  const expiry = new PaymentLinks(db, deliveries, links, logger, backgroundAuditTrail(db, logger));
  // Deliveries that are due a retry, and links past their expiry, go on a timer.
  const withTimers = { ...service, close: async () => { deliveries.close(); await service.close(); } };
  return withRecurringTask(withTimers, 5000, () => Promise.allSettled([deliveries.retryDue(), expiry.expireDue(), expiry.repairDeliveries()]), logger);
}
