import { requireUser } from '../../../../platform/authorize.js';
import type { MutationResolvers } from '../__generated__/resolvers-types.js';

export const Mutation: MutationResolvers = {
  login: (_parent, { input }, { authenticator, principal }) => authenticator.login(input, principal),
  logout: async (_parent, _args, { authenticator, principal }) => {
    requireUser(principal);
    if (principal.kind !== 'user') return false;
    return authenticator.logout(principal.sessionId);
  },
};
