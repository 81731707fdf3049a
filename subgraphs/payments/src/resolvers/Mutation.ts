import { appError, ErrorCode } from '../../../../platform/errors.js';
import type { Principal } from '../../../../platform/principal.js';
import type { MutationResolvers } from '../__generated__/resolvers-types.js';

function requireService(principal: Principal): void {
  if (principal.kind !== 'service') throw appError(ErrorCode.FORBIDDEN, 'Only internal services record ACH activity.');
}

export const Mutation: MutationResolvers = {
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
