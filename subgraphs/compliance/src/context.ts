import type DataLoader from 'dataloader';
import type { Collection, Db } from 'mongodb';
import { auditLogCollection, type AuditRecordDocument } from './audit/audit-log.js';
import { loaderByKey, loaderOfGroups } from '../../../platform/graphql/loaders.js';
import type { RequestBase } from '../../../platform/graphql/subgraph.js';
import {
  proceduralRestrictionsCollection,
  restrictionsCollection,
  transactionTypesCollection,
  type ProceduralRestrictionDocument,
  type RestrictionDocument,
  type TransactionTypeDocument,
} from './restrictions/datasource.js';
import { effectiveRestrictions } from '../../../platform/domain/restrictions.js';
import { readRestrictionRules, type RestrictionRulesView } from './restrictions/rules.js';
import { RestrictionWrites } from './restrictions/writes.js';
import { Kyc } from './kyc/kyc.js';
import { kycCollections, type ApplicationDocument } from './kyc/datasource.js';
import { ReturnRates } from './return-rates/return-rates.js';

/** The compliance subgraph's per-request context. */
export interface ComplianceContext extends RequestBase {
  restrictions: DataLoader<string, RestrictionDocument | null>;
  /** The restrictions that apply to a user: their own, or the platform defaults where they have none. */
  effectiveRestrictions: (SvcUserId: string) => Promise<RestrictionDocument[]>;
  proceduralOfUser: DataLoader<string, ProceduralRestrictionDocument[]>;
  transactionTypes: () => Promise<TransactionTypeDocument[]>;
  /** The operators' writes of restrictions, each announced (`restrictions.changed`) and audited. */
  restrictionWrites: RestrictionWrites;
  /** Every rule, or those of some users, for a read model (Query.restrictionRules). */
  restrictionRules: (SvcUserIds: readonly string[] | null) => Promise<RestrictionRulesView>;
  applications: DataLoader<string, ApplicationDocument | null>;
  kyc: Kyc;
  returnRates: ReturnRates;
  /** The audit log every subgraph appends to; read here for operators. */
  auditLog: Collection<AuditRecordDocument>;
}

/** The context of one request to the compliance subgraph. */
export function createComplianceContext(base: RequestBase, db: Db): ComplianceContext {
  const restrictions = restrictionsCollection(db);
  const ofUser = loaderOfGroups(restrictions, 'SvcUserId');
  let defaults: Promise<RestrictionDocument[]> | undefined;
  let types: Promise<TransactionTypeDocument[]> | undefined;
  const transactionTypes = () => (types ??= transactionTypesCollection(db).find({}).sort({ _id: 1 }).toArray());
  return {
    ...base,
    restrictions: loaderByKey(restrictions),
    effectiveRestrictions: async (SvcUserId) => {
      const own = await ofUser.load(SvcUserId);
      // The defaults are read only for a user who has none of their own.
      if (own.length === 0) defaults ??= restrictions.find({ SvcUserId: null }).toArray();
      return [...effectiveRestrictions(own, own.length === 0 ? await defaults! : [])];
    },
    proceduralOfUser: loaderOfGroups(proceduralRestrictionsCollection(db), 'SvcUserId', { sort: { dtsCreated: 1, _id: 1 } }),
    transactionTypes,
    restrictionWrites: new RestrictionWrites(db, base.audit, transactionTypes),
    restrictionRules: (SvcUserIds) => readRestrictionRules(db, SvcUserIds),
    applications: loaderByKey(kycCollections(db).applications),
    kyc: new Kyc(db, base.logger),
    returnRates: new ReturnRates(db, base.logger),
    auditLog: auditLogCollection(db),
  };
}
