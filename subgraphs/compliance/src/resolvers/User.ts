import { maySeeUser } from '../../../../platform/security/authorize.js';
import type { UserResolvers } from '../__generated__/resolvers-types.js';
import { inEvaluationOrder } from '../../../../platform/domain/restrictions.js';

export const User: UserResolvers = {
  __resolveReference: (reference, { principal }) => (maySeeUser(principal, reference.SvcUserId) ? reference : null),
  restrictions: async (user, _args, { effectiveRestrictions }) => inEvaluationOrder(await effectiveRestrictions(user.SvcUserId)),
  proceduralRestrictionNames: async (user, _args, { proceduralOfUser }) => (await proceduralOfUser.load(user.SvcUserId)).map((p) => p.name),
};
