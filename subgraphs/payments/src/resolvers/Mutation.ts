import { requireService } from '../../../../platform/authorize.js';
import type { MutationResolvers } from '../__generated__/resolvers-types.js';
import { openCheckingAccount, recordCardTransaction } from '../card-transactions.js';

/** Card issuing and authorization (the cards subgraph); ACH activity (the ACH processor link, an internal service). */
const CARDS = ['cards'];
const ACH_PROCESSOR = ['ach-processor'];

export const Mutation: MutationResolvers = {
  recordCardTransaction: (_parent, { input }, { principal, db }) => {
    requireService(principal, CARDS);
    return recordCardTransaction(db, input);
  },
  openCheckingAccount: (_parent, { SvcUserId, currency }, { principal, db }) => {
    requireService(principal, CARDS);
    return openCheckingAccount(db, SvcUserId, currency);
  },
  recordAchDebit: async (_parent, { input }, { principal, ach, forwardAchEvents }) => {
    requireService(principal, ACH_PROCESSOR);
    const payment = await ach.recordDebit(input);
    forwardAchEvents();
    return payment;
  },
  recordAchReturn: async (_parent, { input }, { principal, ach, forwardAchEvents }) => {
    requireService(principal, ACH_PROCESSOR);
    const payment = await ach.recordReturn(input);
    forwardAchEvents();
    return payment;
  },
};
