import type { HttpService } from '../../../platform/http.js';
import { startSubgraph, type SubgraphStartOptions } from '../../../platform/subgraph.js';
import { createComplianceContext } from './context.js';
import { restrictionsCollection } from './datasources/restrictions.js';
import { resolvers } from './resolvers/index.js';

/** Starts the compliance subgraph. */
export async function start(options: SubgraphStartOptions): Promise<HttpService> {
  const db = options.mongo.db('compliance');
  await restrictionsCollection(db).createIndex({ SvcUserId: 1 });
  return startSubgraph({
    ...options,
    name: 'compliance',
    resolvers,
    createContext: (base) => createComplianceContext(base, db),
  });
}
