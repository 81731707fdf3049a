import { maySeeUser } from '../../../../platform/security/authorize.js';
import { globalId, ownKey } from '../../../../platform/graphql/global-id.js';
import type { UserResolvers } from '../__generated__/resolvers-types.js';

export const User: UserResolvers = {
  id: (parent) => globalId('User', parent.SvcUserId),
  __resolveReference: async (reference, { users, principal }) => {
    // By its own key, or by its global id (node(id:), a client refetching the record).
    const SvcUserId = ownKey(reference, 'User', 'SvcUserId');
    if (SvcUserId === null) return null;
    if (!maySeeUser(principal, SvcUserId)) return null;
    return users.load(SvcUserId);
  },
  name: (user) => ({ firstName: user.firstName, middleName: user.middleName, lastName: user.lastName }),
  dobDay: (user) => user.dosDob?.slice(8, 10) ?? null,
  dobMonth: (user) => user.dosDob?.slice(5, 7) ?? null,
  dobYear: (user) => user.dosDob?.slice(0, 4) ?? null,
};
