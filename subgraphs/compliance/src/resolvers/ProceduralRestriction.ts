import type { ProceduralRestrictionResolvers, UserRestrictionRulesResolvers } from '../__generated__/resolvers-types.js';
import { globalId } from '../../../../platform/graphql/global-id.js';
import type { ProceduralRestrictionDocument } from '../restrictions/datasource.js';
import { PROCEDURAL_RESTRICTION } from '../restrictions/writes.js';

/** A procedural restriction, from its stored document. */
export const ProceduralRestriction: ProceduralRestrictionResolvers = {
  id: (placed) => globalId(PROCEDURAL_RESTRICTION, placed._id),
  // One written by hand, before placeProceduralRestriction, may lack the time.
  dtsCreated: (placed: Partial<Pick<ProceduralRestrictionDocument, 'dtsCreated'>>) => placed.dtsCreated ?? null,
};

/** One user's rules in an export (Query.restrictionRules). */
export const UserRestrictionRules: UserRestrictionRulesResolvers = {
  id: (user) => globalId('UserRestrictionRules', user.SvcUserId),
};
