import { maySeeUser } from '../../../../platform/security/authorize.js';
import type { TransactionResolvers } from '../__generated__/resolvers-types.js';

export const Transaction: TransactionResolvers = {
  __resolveReference: async ({ transactionId }, { transactions, principal }) => {
    const transaction = await transactions.load(transactionId);
    return transaction && maySeeUser(principal, transaction.SvcUserId) ? transaction : null;
  },
};
