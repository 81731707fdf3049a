import { requireAggregator } from '../../../../platform/authorize.js';
import { appError, ErrorCode } from '../../../../platform/errors.js';
import type { MutationResolvers } from '../__generated__/resolvers-types.js';

export const Mutation: MutationResolvers = {
  initializeCustomer: (_parent, { input }, { principal, kyc }) => kyc.initializeCustomer(requireAggregator(principal, 'write').svcAggregatorId, input),
  generateDocument: (_parent, { input }, { principal, kyc }) => kyc.generateDocument(requireAggregator(principal, 'write').svcAggregatorId, input),
  uploadDocument: (_parent, { input }, { principal, kyc }) => kyc.uploadDocument(requireAggregator(principal, 'write').svcAggregatorId, input),
  applyAchActivity: async (_parent, { activities }, { principal, returnRates }) => {
    if (principal.kind !== 'service') throw appError(ErrorCode.FORBIDDEN, 'Only internal services report ACH activity.');
    const checked = activities.map((activity) => {
      if (activity.kind !== 'debit' && activity.kind !== 'return') throw appError(ErrorCode.VALIDATION_FAILED, 'kind must be debit or return.', { field: 'kind' });
      return { ...activity, kind: activity.kind as 'debit' | 'return', returnCode: activity.returnCode ?? null };
    });
    return { applied: await returnRates.apply(checked) };
  },
  updateApplication: (_parent, { input }, { principal, kyc }) => kyc.update(requireAggregator(principal, 'write').svcAggregatorId, input),
};
