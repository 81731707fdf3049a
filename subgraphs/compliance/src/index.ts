import type { Config } from '../../../platform/config.js';
import type { HttpService } from '../../../platform/http.js';
import type { Logger } from '../../../platform/logger.js';
import type { Mongo } from '../../../platform/mongo.js';
import { startSubgraph } from '../../../platform/subgraph.js';
import { createComplianceContext } from './context.js';
import { restrictionsCollection } from './datasources/restrictions.js';
import { resolvers } from './resolvers/index.js';

/** Starts the compliance subgraph. */
export async function start(options: { config: Config; logger: Logger; mongo: Mongo; port?: number }): Promise<HttpService> {
  const db = options.mongo.db('compliance');
  await restrictionsCollection(db).createIndex({ SvcUserId: 1 });
  return startSubgraph({
    name: 'compliance',
    config: options.config,
    logger: options.logger,
    mongo: options.mongo,
    port: options.port ?? options.config.ports.compliance,
    resolvers,
    createContext: (base) => createComplianceContext(base, db),
  });
}
