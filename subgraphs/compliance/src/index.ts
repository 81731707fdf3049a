import { auditLogCollection, createAuditLogIndexes } from './audit/audit-log.js';
import type { HttpService } from '../../../platform/http/server.js';
import { startSubgraph, withRecurringTask, type SubgraphStartOptions } from '../../../platform/graphql/subgraph.js';
import { createComplianceContext } from './context.js';
import { proceduralRestrictionsCollection, restrictionsCollection } from './datasources/restrictions.js';
import { kycCollections } from './kyc.js';
import { ReturnRates, returnRateCollections } from './return-rates.js';
import { resolvers } from './resolvers/index.js';

/** Starts the compliance subgraph. */
export async function start(options: SubgraphStartOptions): Promise<HttpService> {
  const db = options.mongo.db('compliance');
  await restrictionsCollection(db).createIndex({ SvcUserId: 1 });
  await proceduralRestrictionsCollection(db).createIndex({ SvcUserId: 1 });
  const { applications, documents } = kycCollections(db);
  await applications.createIndex({ svcAggregatorId: 1, customerId: 1, dtsCreated: 1, _id: 1 });
  await documents.createIndex({ svcAggregatorId: 1, customerId: 1 });
  const { days, reports } = returnRateCollections(db);
  await days.createIndex({ svcAggregatorId: 1, date: 1 });
  await reports.createIndex({ svcAggregatorId: 1, maxDate: -1 });
  await reports.createIndex({ svcAggregatorId: 1, reportDate: -1 });
  await createAuditLogIndexes(auditLogCollection(db));
  const service = await startSubgraph({
    ...options,
    name: 'compliance',
    resolvers,
    createContext: (base) => createComplianceContext(base, db),
  });
  // The daily job: bring every aggregator's return-rate reports up to today, at start and hourly.
  const returnRates = new ReturnRates(db, options.logger.child({ service: 'compliance-subgraph', job: 'ach-return-rates' }));
  const catchUp = () => returnRates.catchUp(new Date().toISOString().slice(0, 10)).catch((error: unknown) => options.logger.error('ach return rates job failed', { error }));
  await catchUp();
  return withRecurringTask(service, 3600_000, catchUp, options.logger);
}
