import { maySeeUser } from '../../../../platform/authorize.js';
import type { UserResolvers } from '../__generated__/resolvers-types.js';

export const User: UserResolvers = {
  __resolveReference: (reference, { principal }) => (maySeeUser(principal, reference.SvcUserId) ? reference : null),
  accounts: (user, _args, { accountsOfUser }) => accountsOfUser.load(user.SvcUserId),
  beneficiaries: (user, _args, { beneficiariesOfUser }) => beneficiariesOfUser.load(user.SvcUserId),
};
