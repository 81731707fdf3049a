import { requireAggregator, requireMerchant, requireUser } from '../../../../platform/authorize.js';
import type { QueryResolvers } from '../__generated__/resolvers-types.js';
import { merchantsCollection } from '../datasources/merchants.js';
import { retrieveFunds } from '../funds.js';
import { latestTransactions } from '../transactions.js';

export const Query: QueryResolvers = {
  latestTransactions: (_parent, { SvcAccountId }, { principal, db }) => latestTransactions(db, requireUser(principal), SvcAccountId),
  iousFor: (_parent, { SvcUserId }, { principal, ious }) => ious.for(requireUser(principal), SvcUserId),
  fundsTransactions: (_parent, { input }, { principal, db }) => retrieveFunds(db, requireAggregator(principal, 'read').svcAggregatorId, input),
  paymentLink: async (_parent, { svcTransactionId }, { principal, paymentLinks }) => {
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
  refundList: (_parent, { filter }, { principal, refunds }) => refunds.list(requireAggregator(principal, 'read').svcAggregatorId, filter ?? {}),
  paymentPage: (_parent, { link }, { links }) => links.page(link),
  merchants: (_parent, _args, { principal, db }) => merchantsCollection(db).find({ svcAggregatorId: requireAggregator(principal, 'read').svcAggregatorId }).sort({ _id: 1 }).toArray(),
};
