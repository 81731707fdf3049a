import { maySeeUser } from '../../../../platform/authorize.js';
import type { UserResolvers } from '../__generated__/resolvers-types.js';

export const User: UserResolvers = {
  __resolveReference: (reference, { principal }) => (maySeeUser(principal, reference.SvcUserId) ? reference : null),
  restrictions: (user, _args, { restrictionsOfUser }) => restrictionsOfUser.load(user.SvcUserId),
};
