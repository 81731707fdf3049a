import { appendAuditRecords } from '../audit/audit-log.js';
import type { AchActivity } from '../../../../platform/contracts/events.js';
import { requireAggregator, requireService } from '../../../../platform/security/authorize.js';
import { checkAmount, HOME_CURRENCY } from '../../../../platform/money/money.js';
import type { MutationResolvers } from '../__generated__/resolvers-types.js';

export const Mutation: MutationResolvers = {
  initializeCustomer: (_parent, { input }, { principal, kyc }) =>
    kyc.initializeCustomer(requireAggregator(principal, 'write').svcAggregatorId, input),
  generateDocument: (_parent, { input }, { principal, kyc }) =>
    kyc.generateDocument(requireAggregator(principal, 'write').svcAggregatorId, input),
  uploadDocument: (_parent, { input }, { principal, kyc }) =>
    kyc.uploadDocument(requireAggregator(principal, 'write').svcAggregatorId, input),
  applyAchActivity: async (_parent, { activities }, { principal, returnRates }) => {
    // Only the payments subgraph, which owns the ACH debits, reports them.
    requireService(principal, ['payments']);
    const checked = activities.map((activity): AchActivity => {
      // ACH moves US dollars.
      checkAmount(activity.amount, HOME_CURRENCY, 'amount');
      return { ...activity, kind: activity.kind, returnCode: activity.returnCode ?? null };
    });
    return { applied: await returnRates.apply(checked) };
  },
  appendAuditRecords: async (_parent, { records }, { principal, auditLog }) => {
    // Only the subgraphs that record acts forward them; nobody else may write the trail.
    requireService(principal, ['user', 'cards', 'payments', 'compliance']);
    return { appended: await appendAuditRecords(auditLog, records) };
  },
  updateApplication: (_parent, { input }, { principal, kyc }) => kyc.update(requireAggregator(principal, 'write').svcAggregatorId, input),
  // The rules of transactions are the bank's operators' to change, as blocking a user is.
  setRestriction: (_parent, { input }, { principal, restrictionWrites }) => {
    requireService(principal, ['operator']);
    return restrictionWrites.set(input);
  },
  removeRestriction: (_parent, { restrictionId }, { principal, restrictionWrites }) => {
    requireService(principal, ['operator']);
    return restrictionWrites.remove(restrictionId);
  },
  placeProceduralRestriction: (_parent, { input }, { principal, restrictionWrites }) => {
    requireService(principal, ['operator']);
    return restrictionWrites.placeProcedural(input);
  },
  liftProceduralRestriction: (_parent, { id }, { principal, restrictionWrites }) => {
    requireService(principal, ['operator']);
    return restrictionWrites.liftProcedural(id);
  },
};
