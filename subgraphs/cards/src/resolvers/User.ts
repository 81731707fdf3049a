import { maySeeUser } from '../../../../platform/security/authorize.js';
import type { UserResolvers } from '../__generated__/resolvers-types.js';

export const User: UserResolvers = {
  __resolveReference: (reference, { principal }) => (maySeeUser(principal, reference.SvcUserId) ? reference : null),
  cards: (user, _args, { cardsOfUser }) => cardsOfUser.load(user.SvcUserId),
};
