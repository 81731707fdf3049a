import { maySeeUser } from '../../../../platform/security/authorize.js';
import { globalId } from '../../../../platform/graphql/global-id.js';
import type { CardResolvers } from '../__generated__/resolvers-types.js';

export const Card: CardResolvers = {
  id: (parent) => globalId('Card', parent.SvcCardId),
  __resolveReference: async ({ SvcCardId }, { cards, principal }) => {
    const card = await cards.load(SvcCardId);
    return card && maySeeUser(principal, card.SvcUserId) ? card : null;
  },
  user: (card) => ({ SvcUserId: card.SvcUserId }),
  account: (card) => ({ SvcAccountId: card.SvcAccountId }),
};
