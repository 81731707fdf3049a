import type { Config } from '../../../platform/config.js';
import type { HttpService } from '../../../platform/http.js';
import type { Logger } from '../../../platform/logger.js';
import type { Mongo } from '../../../platform/mongo.js';
import { startSubgraph } from '../../../platform/subgraph.js';
import { createPaymentsContext } from './context.js';
import { accountsCollection } from './datasources/accounts.js';
import { beneficiariesCollection } from './datasources/beneficiaries.js';
import { transactionsCollection } from './datasources/transactions.js';
import { resolvers } from './resolvers/index.js';

/** Starts the payments subgraph. */
export async function start(options: { config: Config; logger: Logger; mongo: Mongo; port?: number }): Promise<HttpService> {
  const db = options.mongo.db('payments');
  await accountsCollection(db).createIndex({ SvcUserId: 1 });
  await transactionsCollection(db).createIndex({ SvcAccountId: 1, dtsValue: -1, _id: -1 });
  await beneficiariesCollection(db).createIndex({ SvcUserId: 1 });
  return startSubgraph({
    name: 'payments',
    config: options.config,
    logger: options.logger,
    mongo: options.mongo,
    port: options.port ?? options.config.ports.payments,
    resolvers,
    createContext: (base) => createPaymentsContext(base, db),
  });
}
