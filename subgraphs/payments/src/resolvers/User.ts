import { maySeeUser } from '../../../../platform/security/authorize.js';
import type { UserResolvers } from '../__generated__/resolvers-types.js';

export const User: UserResolvers = {
  __resolveReference: (reference, { principal }) => (maySeeUser(principal, reference.SvcUserId) ? reference : null),
  accounts: (user, _args, { accountsOfUser }) => accountsOfUser.load(user.SvcUserId),
  beneficiaries: (user, _args, { beneficiariesOfUser }) => beneficiariesOfUser.load(user.SvcUserId),
  ious: async (user, _args, { iouAccountsOfLender, iouAccountsOfBorrower }) => {
    const [lent, borrowed] = await Promise.all([iouAccountsOfLender.load(user.SvcUserId), iouAccountsOfBorrower.load(user.SvcUserId)]);
    return [...lent, ...borrowed].sort((a, b) => b.dtsModified.getTime() - a.dtsModified.getTime());
  },
};
