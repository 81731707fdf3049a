import { maySeeUser } from '../../../../platform/authorize.js';
import type { RestrictionResolvers } from '../__generated__/resolvers-types.js';

export const Restriction: RestrictionResolvers = {
  __resolveReference: async ({ restrictionId }, { restrictions, principal }) => {
    const restriction = await restrictions.load(restrictionId);
    return restriction && maySeeUser(principal, restriction.SvcUserId) ? restriction : null;
  },
};
