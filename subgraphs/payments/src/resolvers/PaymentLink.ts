import type {
  MerchantResolvers,
  PaymentLinkResolvers,
  RefundTransactionResolvers,
  UndoResolvers,
} from '../__generated__/resolvers-types.js';
import { globalId, ownKey } from '../../../../platform/graphql/global-id.js';
import { maskLastFour } from '../../../../platform/security/masking.js';
import { fromMinor } from '../../../../platform/money/money.js';
import { isInternalService } from '../../../../platform/security/service-scope.js';

export const PaymentLink: PaymentLinkResolvers = {
  id: (parent) => globalId('PaymentLink', parent.svcTransactionId),
  __resolveReference: async (reference, { paymentLinks, principal }) => {
    // By its own key, or by its global id (node(id:), a client refetching the record).
    const svcTransactionId = ownKey(reference, 'PaymentLink', 'svcTransactionId');
    if (svcTransactionId === null) return null;
    const link = await paymentLinks.load(svcTransactionId);
    if (!link) return null;
    const visible =
      isInternalService(principal) ||
      (principal.kind === 'aggregator' && principal.svcAggregatorId === link.svcAggregatorId) ||
      (principal.kind === 'merchant' && principal.svcMerchantId === link.svcMerchantId) ||
      (principal.kind === 'customer' && principal.svcTransactionId === link._id);
    return visible ? link : null;
  },
  merchant: (link, _args, { merchants }) => merchants.load(link.svcMerchantId),
  amount: (link) => fromMinor(link.amount, link.currency),
};

export const Merchant: MerchantResolvers = {
  id: (parent) => globalId('Merchant', parent.svcMerchantId),
  __resolveReference: async (reference, { merchants, principal }) => {
    // By its own key, or by its global id (node(id:), a client refetching the record).
    const svcMerchantId = ownKey(reference, 'Merchant', 'svcMerchantId');
    if (svcMerchantId === null) return null;
    const merchant = await merchants.load(svcMerchantId);
    if (!merchant) return null;
    const visible =
      isInternalService(principal) ||
      ((principal.kind === 'aggregator' || principal.kind === 'merchant' || principal.kind === 'customer') &&
        principal.svcAggregatorId === merchant.svcAggregatorId &&
        (principal.kind === 'aggregator' || principal.svcMerchantId === merchant._id));
    return visible ? merchant : null;
  },
  // A customer sees the merchant's name and logos, not where its webhooks go.
  webhookUrl: (merchant, _args, { principal }) =>
    principal.kind === 'aggregator' || principal.kind === 'merchant' || isInternalService(principal) ? merchant.webhookUrl : null,
};

export const RefundTransaction: RefundTransactionResolvers = {
  id: (parent) => globalId('RefundTransaction', parent.svcTransactionId),
  ach: (refund) => {
    if (!refund.ach) return null;
    const { payment, result } = refund.ach;
    const { DFIAccountNumberLastFour, ...instruction } = payment;
    const DFIAccountNumber = maskLastFour(DFIAccountNumberLastFour);
    return {
      payment: { ...instruction, amount: fromMinor(payment.amount, payment.currency), DFIAccountNumber },
      result: result && {
        svcTransactionId: refund._id,
        reference: payment.reference,
        svcAggregatorId: refund.svcAggregatorId,
        status: result.status,
        dtsCreatedAt: result.dtsCreatedAt,
        effectiveEntryDate: payment.effectiveEntryDate,
        individualName: payment.individualName,
        routingNumber: payment.routingNumber,
        amount: fromMinor(payment.amount, payment.currency),
        currency: payment.currency,
        DFIAccountNumber,
      },
    };
  },
};

export const Undo: UndoResolvers = {
  id: (undo) => undo._id,
  isActionable: (undo, _args, { beneficiaryBook }) => beneficiaryBook.isActionable(undo),
};
