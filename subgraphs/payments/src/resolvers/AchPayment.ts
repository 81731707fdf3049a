import type { AchPaymentResolvers } from '../__generated__/resolvers-types.js';
import { globalId, ownKey } from '../../../../platform/graphql/global-id.js';
import { fromMinor } from '../../../../platform/money/money.js';
import { isInternalService } from '../../../../platform/security/service-scope.js';

export const AchPayment: AchPaymentResolvers = {
  id: (parent) => globalId('AchPayment', parent.svcTransactionId),
  __resolveReference: async (reference, { achPayments, principal }) => {
    // By its own key, or by its global id (node(id:), a client refetching the record).
    const svcTransactionId = ownKey(reference, 'AchPayment', 'svcTransactionId');
    if (svcTransactionId === null) return null;
    const payment = await achPayments.load(svcTransactionId);
    const visible =
      payment &&
      (isInternalService(principal) ||
        (principal.kind === 'aggregator' && principal.svcAggregatorId === payment.svcAggregatorId) ||
        (principal.kind === 'merchant' && payment.svcMerchantId !== null && principal.svcMerchantId === payment.svcMerchantId));
    return visible ? payment : null;
  },
  amount: (payment) => fromMinor(payment.amount, payment.currency),
};
