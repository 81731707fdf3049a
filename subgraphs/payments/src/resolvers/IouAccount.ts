import type { Principal } from '../../../../platform/contracts/principal.js';
import { globalId, ownKey } from '../../../../platform/graphql/global-id.js';
import type { IouAccountResolvers, IouTransactionResolvers } from '../__generated__/resolvers-types.js';
import { amountFor } from '../ious/ious.js';
import { fromMinor, sumMinor } from '../../../../platform/money/money.js';
import { isInternalService } from '../../../../platform/security/service-scope.js';

/** Whose side amounts are read from: the end user, or (internal services) the borrower's. */
const viewerOf = (principal: Principal, borrower: string) => (principal.kind === 'user' ? principal.userId : borrower);
const isParty = (principal: Principal, lender: string, borrower: string) =>
  isInternalService(principal) || (principal.kind === 'user' && (principal.userId === lender || principal.userId === borrower));

export const IouAccount: IouAccountResolvers = {
  id: (parent) => globalId('IouAccount', parent.IOUAccountId),
  __resolveReference: async (reference, { iouAccounts, principal }) => {
    // By its own key, or by its global id (node(id:), a client refetching the record).
    const IOUAccountId = ownKey(reference, 'IouAccount', 'IOUAccountId');
    if (IOUAccountId === null) return null;
    const account = await iouAccounts.load(IOUAccountId);
    return account && isParty(principal, account.SvcUserId, account.otherSvcUserId) ? account : null;
  },
  transactions: (account, _args, { iouTransactionsOfAccount }) => iouTransactionsOfAccount.load(account._id),
  balance: async (account, _args, { iouTransactionsOfAccount, principal }) => {
    const viewer = viewerOf(principal, account.otherSvcUserId);
    const settled = (await iouTransactionsOfAccount.load(account._id)).filter((t) => t.isActive && !t.isPending);
    return fromMinor(sumMinor(...settled.map((t) => amountFor(viewer, t))), account.currency);
  },
};

export const IouTransaction: IouTransactionResolvers = {
  id: (parent) => globalId('IouTransaction', parent.IOUTransactionId),
  amount: (transaction, _args, { principal }) =>
    fromMinor(amountFor(viewerOf(principal, transaction.borrowerSvcUserId), transaction), transaction.currency),
};
