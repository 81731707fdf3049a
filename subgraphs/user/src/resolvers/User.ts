import { maySeeUser } from '../../../../platform/security/authorize.js';
import { globalId } from '../../../../platform/graphql/global-id.js';
import type { UserResolvers } from '../__generated__/resolvers-types.js';

export const User: UserResolvers = {
  id: (parent) => globalId('User', parent.SvcUserId),
  __resolveReference: async ({ SvcUserId }, { users, principal }) => {
    if (!maySeeUser(principal, SvcUserId)) return null;
    return users.load(SvcUserId);
  },
  name: (user) => ({ firstName: user.firstName, middleName: user.middleName, lastName: user.lastName }),
  dobDay: (user) => user.dosDob?.slice(8, 10) ?? null,
  dobMonth: (user) => user.dosDob?.slice(5, 7) ?? null,
  dobYear: (user) => user.dosDob?.slice(0, 4) ?? null,
};
