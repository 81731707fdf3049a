import { appError, ErrorCode } from '../../../../platform/errors.js';
import type { Principal } from '../../../../platform/principal.js';
import type { MutationResolvers } from '../__generated__/resolvers-types.js';
import { openCheckingAccount, recordCardTransaction } from '../card-transactions.js';

function requireService(principal: Principal): void {
  if (principal.kind !== 'service') throw appError(ErrorCode.FORBIDDEN, 'Only internal services may do this.');
}

export const Mutation: MutationResolvers = {
  recordCardTransaction: (_parent, { input }, { principal, db }) => {
    requireService(principal);
    return recordCardTransaction(db, input);
  },
  openCheckingAccount: (_parent, { SvcUserId, currency }, { principal, db }) => {
    requireService(principal);
    return openCheckingAccount(db, SvcUserId, currency);
  },
  recordAchDebit: async (_parent, { input }, { principal, ach, forwardAchEvents }) => {
    requireService(principal);
    const payment = await ach.recordDebit(input);
    forwardAchEvents();
    return payment;
  },
  recordAchReturn: async (_parent, { input }, { principal, ach, forwardAchEvents }) => {
    requireService(principal);
    const payment = await ach.recordReturn(input);
    forwardAchEvents();
    return payment;
  },
};
