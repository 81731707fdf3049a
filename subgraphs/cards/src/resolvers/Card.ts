import { maySeeUser } from '../../../../platform/security/authorize.js';
import { globalId, ownKey } from '../../../../platform/graphql/global-id.js';
import type { CardResolvers } from '../__generated__/resolvers-types.js';

export const Card: CardResolvers = {
  id: (parent) => globalId('Card', parent.SvcCardId),
  __resolveReference: async (reference, { cards, principal }) => {
    // By its own key, or by its global id (node(id:), a client refetching the record).
    const SvcCardId = ownKey(reference, 'Card', 'SvcCardId');
    if (SvcCardId === null) return null;
    const card = await cards.load(SvcCardId);
    return card && maySeeUser(principal, card.SvcUserId) ? card : null;
  },
  user: (card) => ({ SvcUserId: card.SvcUserId }),
  account: (card) => ({ SvcAccountId: card.SvcAccountId }),
};
