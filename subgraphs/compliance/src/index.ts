import { applyMigrations } from '../../../platform/mongo/migrations.js';
import { auditLogCollection, createAuditLogIndexes } from './audit/audit-log.js';
import type { HttpService } from '../../../platform/http/server.js';
import { startSubgraph, type SubgraphStartOptions } from '../../../platform/graphql/subgraph.js';
import type { ServiceConfig } from '../../../platform/runtime/config-slices.js';
import { withRecurringTask } from '../../../platform/messaging/sweep.js';
import { createComplianceContext } from './context.js';
import { createRestrictionIndexes } from './restrictions/datasource.js';
import { createKycIndexes } from './kyc/datasource.js';
import { ReturnRates } from './return-rates/return-rates.js';
import { createReturnRateIndexes } from './return-rates/datasource.js';
import { resolvers } from './resolvers/index.js';
import { COMPLIANCE_LIST_CAPS } from './list-caps.js';
import { COMPLIANCE_MIGRATIONS } from './migrations.js';

/** Starts the compliance subgraph. */
export async function start(options: SubgraphStartOptions<ServiceConfig<'compliance'>>): Promise<HttpService> {
  const db = options.mongo.db('compliance');
  // Stored documents take the shape this code reads before anything serves them.
  await applyMigrations(db, COMPLIANCE_MIGRATIONS, (message, fields) => options.logger.info(message, fields));
  await createRestrictionIndexes(db);
  await createKycIndexes(db);
  await createReturnRateIndexes(db);
  await createAuditLogIndexes(auditLogCollection(db));
  const service = await startSubgraph({
    ...options,
    name: 'compliance',
    resolvers,
    listCaps: COMPLIANCE_LIST_CAPS,
    createContext: (base) => createComplianceContext(base, db),
  });
  // The daily job: bring every aggregator's return-rate reports up to today, at start and hourly.
  const returnRates = new ReturnRates(db, options.logger.child({ service: 'compliance-subgraph', job: 'ach-return-rates' }));
  const catchUp = () =>
    returnRates
      .catchUp(new Date().toISOString().slice(0, 10))
      .catch((error: unknown) => options.logger.error('ach return rates job failed', { error }));
  await catchUp();
  return withRecurringTask(service, 3600_000, catchUp, options.logger);
}
