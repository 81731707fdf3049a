import type { ListCaps } from '../../../platform/graphql/list-caps.js';

/** The most items of each list the compliance subgraph takes from clients (see platform/graphql/list-caps.ts). */
export const COMPLIANCE_LIST_CAPS = {
  'Query.restrictionRules(SvcUserIds:)': 1000,
  // The subgraphs' outboxes forward batches of 50 audit records and 20 ACH activities.
  'Mutation.appendAuditRecords(records:)': 500,
  'Mutation.applyAchActivity(activities:)': 500,
  'RestrictionInput.transactionCurrencies': 50,
  'RestrictionInput.txnTypes': 50,
  // An application has at most two entities (a business and its representative), three views each.
  'ApplicationUpdateInput.documents': 10,
} as const satisfies ListCaps;
