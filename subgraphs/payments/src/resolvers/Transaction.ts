import { maySeeUser } from '../../../../platform/security/authorize.js';
import { globalId } from '../../../../platform/graphql/global-id.js';
import type { TransactionResolvers } from '../__generated__/resolvers-types.js';

export const Transaction: TransactionResolvers = {
  id: (parent) => globalId('Transaction', parent.transactionId),
  __resolveReference: async ({ transactionId }, { transactions, principal }) => {
    const transaction = await transactions.load(transactionId);
    return transaction && maySeeUser(principal, transaction.SvcUserId) ? transaction : null;
  },
};
