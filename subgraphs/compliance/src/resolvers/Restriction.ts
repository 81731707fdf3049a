import type { RestrictionResolvers } from '../__generated__/resolvers-types.js';
import { globalId, ownKey } from '../../../../platform/graphql/global-id.js';
import { fromMinor, type MinorUnits } from '../../../../platform/money/money.js';
import { isInternalService } from '../../../../platform/security/service-scope.js';

/** A bound as decimal text; a stored document may lack one that is null. */
function boundOf(amount: MinorUnits | null | undefined, currency: string | null | undefined): string | null {
  return amount === null || amount === undefined || !currency ? null : fromMinor(amount, currency);
}

export const Restriction: RestrictionResolvers = {
  id: (parent) => globalId('Restriction', parent.restrictionId),
  __resolveReference: async (reference, { restrictions, principal }) => {
    // By its own key, or by its global id (node(id:), a client refetching the record).
    const restrictionId = ownKey(reference, 'Restriction', 'restrictionId');
    if (restrictionId === null) return null;
    const restriction = await restrictions.load(restrictionId);
    if (!restriction) return null;
    // Platform defaults are public; a user's own are theirs.
    const visible =
      restriction.SvcUserId === null ||
      isInternalService(principal) ||
      (principal.kind === 'user' && principal.userId === restriction.SvcUserId);
    return visible ? restriction : null;
  },
  fromAmount: (restriction) => boundOf(restriction.fromAmount, restriction.fromAmountCurrency),
  toAmount: (restriction) => boundOf(restriction.toAmount, restriction.toAmountCurrency),
};
