import type { AchPaymentResolvers } from '../__generated__/resolvers-types.js';

export const AchPayment: AchPaymentResolvers = {
  __resolveReference: async ({ svcTransactionId }, { achPayments, principal }) => {
    const payment = await achPayments.load(svcTransactionId);
    const visible = payment && (principal.kind === 'service' || (principal.kind === 'aggregator' && principal.svcAggregatorId === payment.svcAggregatorId));
    return visible ? payment : null;
  },
};
