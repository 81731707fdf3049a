import type DataLoader from 'dataloader';
import type { Db } from 'mongodb';
import { loaderByKey, loaderOfGroups } from '../../../platform/loaders.js';
import type { RequestBase } from '../../../platform/subgraph.js';
import { restrictionsCollection, type RestrictionDocument } from './datasources/restrictions.js';

/** The compliance subgraph's per-request context. */
export interface ComplianceContext extends RequestBase {
  restrictions: DataLoader<string, RestrictionDocument | null>;
  /** A user's restrictions in evaluation order: priority, then name. */
  restrictionsOfUser: DataLoader<string, RestrictionDocument[]>;
}

export function createComplianceContext(base: RequestBase, db: Db): ComplianceContext {
  const restrictions = restrictionsCollection(db);
  return {
    ...base,
    restrictions: loaderByKey(restrictions),
    restrictionsOfUser: loaderOfGroups(restrictions, 'SvcUserId', { sort: { priority: 1, restrictionName: 1, _id: 1 } }),
  };
}
