import { requireAggregator } from '../../../../platform/authorize.js';
import type { MutationResolvers } from '../__generated__/resolvers-types.js';

export const Mutation: MutationResolvers = {
  initializeCustomer: (_parent, { input }, { principal, kyc }) => kyc.initializeCustomer(requireAggregator(principal, 'write').svcAggregatorId, input),
  generateDocument: (_parent, { input }, { principal, kyc }) => kyc.generateDocument(requireAggregator(principal, 'write').svcAggregatorId, input),
  uploadDocument: (_parent, { input }, { principal, kyc }) => kyc.uploadDocument(requireAggregator(principal, 'write').svcAggregatorId, input),
  updateApplication: (_parent, { input }, { principal, kyc }) => kyc.update(requireAggregator(principal, 'write').svcAggregatorId, input),
};
