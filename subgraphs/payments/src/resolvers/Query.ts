import { requireAggregator, requireCustomer, requireMerchant, requireUser } from '../../../../platform/security/authorize.js';
import type { QueryResolvers } from '../__generated__/resolvers-types.js';
import type { Filter } from 'mongodb';
import { checkString, ID_RULE } from '../../../../platform/security/validate.js';
import { checkDeliveryStatus, type DeliveryDocument } from '../merchants/deliveries.js';
import { maySeeDelivery } from './Delivery.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { offsetConnection } from '../../../../platform/graphql/paging.js';
import type { PaymentsContext } from '../context.js';
import { isInternalService } from '../../../../platform/security/service-scope.js';

export const Query: QueryResolvers = {
  latestTransactions: (_parent, { SvcAccountId }, { principal, accountBook }) => accountBook.latest(requireUser(principal), SvcAccountId),
  iousFor: (_parent, { SvcUserId }, { principal, ious }) => ious.for(requireUser(principal), SvcUserId),
  fundsTransactions: (_parent, { input }, { principal, funds }) => funds(requireAggregator(principal, 'read').svcAggregatorId, input),
  paymentLink: async (_parent, { svcTransactionId }, { principal, paymentLinks }) => {
    // Only a merchant, a customer or an aggregator asks, whatever the id; without an id, only a customer (its own link).
    if (principal.kind !== 'merchant' && principal.kind !== 'customer') requireAggregator(principal, 'read');
    if (!svcTransactionId) requireCustomer(principal);
    // A customer reads the one link its JWT was issued for.
    const id = principal.kind === 'customer' ? (svcTransactionId ?? principal.svcTransactionId) : svcTransactionId;
    if (!id) return null;
    const link = await paymentLinks.load(id);
    if (!link) return null;
    if (principal.kind === 'merchant') return link.svcMerchantId === principal.svcMerchantId ? link : null;
    if (principal.kind === 'customer') return link._id === principal.svcTransactionId ? link : null;
    return link.svcAggregatorId === requireAggregator(principal, 'read').svcAggregatorId ? link : null;
  },
  paymentLinks: (_parent, args, { principal, links }) => links.list(requireMerchant(principal).svcMerchantId, args),
  paymentLinksConnection: (_parent, { status, ...args }, { principal, links }) => {
    const { svcMerchantId } = requireMerchant(principal);
    return offsetConnection(args, (page) => links.list(svcMerchantId, { status, ...page }));
  },
  paymentLinkStatusCounts: (_parent, _args, { principal, links }) =>
    links.statusCounts(
      principal.kind === 'merchant'
        ? { svcMerchantId: principal.svcMerchantId }
        : { svcAggregatorId: requireAggregator(principal, 'read').svcAggregatorId },
    ),
  refundList: (_parent, { filter }, { principal, refunds }) =>
    refunds.list(requireAggregator(principal, 'read').svcAggregatorId, filter ?? {}),
  refundsConnection: (_parent, { filter, ...args }, { principal, refunds }) => {
    const { svcAggregatorId } = requireAggregator(principal, 'read');
    const where = connectionFilter(filter);
    return offsetConnection(args, (page) => refunds.list(svcAggregatorId, { ...where, ...page }));
  },
  paymentPage: (_parent, { link }, { links }) => links.page(link),
  achPayment: async (_parent, { svcTransactionId }, { principal, achPayments }) => {
    if (principal.kind !== 'merchant') requireAggregator(principal, 'read');
    const payment = await achPayments.load(svcTransactionId);
    if (!payment) return null;
    if (principal.kind === 'merchant') return payment.svcMerchantId === principal.svcMerchantId ? payment : null;
    return payment.svcAggregatorId === requireAggregator(principal, 'read').svcAggregatorId ? payment : null;
  },
  delivery: async (_parent, { deliveryId }, { principal, deliveryLoader }) => {
    if (!isInternalService(principal) && principal.kind !== 'merchant') requireAggregator(principal, 'read');
    const delivery = await deliveryLoader.load(deliveryId);
    return delivery && maySeeDelivery(principal, delivery) ? delivery : null;
  },
  deliveries: (_parent, args, context) => deliveriesOf(context, args)(args),
  deliveriesConnection: (_parent, args, context) => {
    // The caller is checked before the page is read, even when the page is empty.
    const list = deliveriesOf(context, args);
    return offsetConnection(args, list);
  },
  merchants: (_parent, _args, { principal, merchantBook }) => merchantBook.listOf(requireAggregator(principal, 'read').svcAggregatorId),
};

/** Reads offset pages of the deliveries the caller may see: an aggregator's, or a merchant's own; the caller is checked at once. */
function deliveriesOf(
  { principal, deliveryLog }: PaymentsContext,
  args: { status?: DeliveryDocument['status'] | null; svcMerchantId?: string | null },
) {
  const filter: Filter<DeliveryDocument> =
    principal.kind === 'merchant'
      ? { svcMerchantId: principal.svcMerchantId }
      : { svcAggregatorId: requireAggregator(principal, 'read').svcAggregatorId };
  if (args.svcMerchantId) filter.svcMerchantId = checkString(args.svcMerchantId, 'svcMerchantId', ID_RULE)!;
  const status = checkDeliveryStatus(args.status);
  if (status) filter.status = status;
  const none = principal.kind === 'merchant' && args.svcMerchantId && args.svcMerchantId !== principal.svcMerchantId;
  return (page: { numberOfRecords?: number | null; skipRecords?: number | null }) =>
    none ? Promise.resolve({ items: [], total: { skipRecords: 0, numberOfRecords: 0, more: false } }) : deliveryLog(filter, page);
}

/** A refund filter for the connection: its own paging members would contradict first and after. */
function connectionFilter(filter: Record<string, unknown> | null | undefined): Record<string, unknown> {
  for (const field of ['numberOfRecords', 'skipRecords'] as const) {
    if (filter?.[field] !== undefined && filter[field] !== null)
      throw appError(ErrorCode.VALIDATION_FAILED, `filter.${field} pages refundList; refundsConnection pages with first and after.`, {
        field: `filter.${field}`,
      });
  }
  return filter ?? {};
}
