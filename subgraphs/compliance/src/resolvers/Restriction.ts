import type { RestrictionResolvers } from '../__generated__/resolvers-types.js';
import { globalId } from '../../../../platform/graphql/global-id.js';

export const Restriction: RestrictionResolvers = {
  id: (parent) => globalId('Restriction', parent.restrictionId),
  __resolveReference: async ({ restrictionId }, { restrictions, principal }) => {
    const restriction = await restrictions.load(restrictionId);
    if (!restriction) return null;
    // Platform defaults are public; a user's own are theirs.
    const visible = restriction.SvcUserId === null || principal.kind === 'service' || (principal.kind === 'user' && principal.userId === restriction.SvcUserId);
    return visible ? restriction : null;
  },
};
