import type { HttpService } from '../../../platform/http.js';
import { startSubgraph, type SubgraphStartOptions } from '../../../platform/subgraph.js';
import { createPaymentsContext } from './context.js';
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
  return startSubgraph({
    ...options,
    name: 'payments',
    resolvers,
    createContext: (base) => createPaymentsContext(base, db),
  });
}
