import type { HttpService } from '../../../platform/http.js';
import { startSubgraph, type SubgraphStartOptions } from '../../../platform/subgraph.js';
import { createComplianceContext } from './context.js';
import { proceduralRestrictionsCollection, restrictionsCollection } from './datasources/restrictions.js';
import { kycCollections } from './kyc.js';
import { resolvers } from './resolvers/index.js';

/** Starts the compliance subgraph. */
export async function start(options: SubgraphStartOptions): Promise<HttpService> {
  const db = options.mongo.db('compliance');
  await restrictionsCollection(db).createIndex({ SvcUserId: 1 });
  await proceduralRestrictionsCollection(db).createIndex({ SvcUserId: 1 });
  const { applications, documents } = kycCollections(db);
  await applications.createIndex({ svcAggregatorId: 1, customerId: 1, dtsCreated: 1, _id: 1 });
  await documents.createIndex({ svcAggregatorId: 1, customerId: 1 });
  return startSubgraph({
    ...options,
    name: 'compliance',
    resolvers,
    createContext: (base) => createComplianceContext(base, db),
  });
}
