import { maySeeUser } from '../../../../platform/security/authorize.js';
import { globalId, ownKey } from '../../../../platform/graphql/global-id.js';
import { fromMinor } from '../../../../platform/money/money.js';
import type { TransactionResolvers } from '../__generated__/resolvers-types.js';

export const Transaction: TransactionResolvers = {
  id: (parent) => globalId('Transaction', parent.transactionId),
  __resolveReference: async (reference, { transactions, principal }) => {
    // By its own key, or by its global id (node(id:), a client refetching the record).
    const transactionId = ownKey(reference, 'Transaction', 'transactionId');
    if (transactionId === null) return null;
    const transaction = await transactions.load(transactionId);
    return transaction && maySeeUser(principal, transaction.SvcUserId) ? transaction : null;
  },
  amount: (transaction) => fromMinor(transaction.amount, transaction.currency),
  debit: (transaction) => fromMinor(transaction.debit, transaction.currency),
  credit: (transaction) => fromMinor(transaction.credit, transaction.currency),
};
