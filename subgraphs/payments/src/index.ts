import type { HttpService } from '../../../platform/http.js';
import { startSubgraph, withRecurringTask, type SubgraphStartOptions } from '../../../platform/subgraph.js';
import { createGraphClient } from '../../../platform/graph-client.js';
import { AchForwarder } from './ach.js';
import { createPaymentsContext } from './context.js';
import { achPaymentsCollection } from './datasources/ach.js';
import { accountsCollection } from './datasources/accounts.js';
import { beneficiariesCollection } from './datasources/beneficiaries.js';
import { transactionsCollection } from './datasources/transactions.js';
import { resolvers } from './resolvers/index.js';

/** Starts the payments subgraph. */
export async function start(options: SubgraphStartOptions): Promise<HttpService> {
  const db = options.mongo.db('payments');
  await accountsCollection(db).createIndex({ SvcUserId: 1 });
  await transactionsCollection(db).createIndex({ SvcAccountId: 1, dtsValue: -1, _id: -1 });
  await beneficiariesCollection(db).createIndex({ SvcUserId: 1 });
  await achPaymentsCollection(db).createIndex({ svcAggregatorId: 1, effectiveEntryDate: 1 });
  await db.collection('outbox').createIndex({ type: 1, dtsForwarded: 1, dtsCreated: 1 });
  const logger = options.logger.child({ service: 'payments-subgraph' });
  const forwarder = new AchForwarder(db, createGraphClient(options.config, 'payments'), logger);
  const service = await startSubgraph({
    ...options,
    name: 'payments',
    resolvers,
    createContext: (base) => createPaymentsContext(base, db, forwarder),
  });
  // Events a crash left unforwarded, and any the immediate forward could not deliver, go on a timer.
  return withRecurringTask(service, 5000, () => forwarder.forward());
}
