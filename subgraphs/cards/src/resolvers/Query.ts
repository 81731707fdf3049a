import { maySeeUser } from '../../../../platform/authorize.js';
import type { QueryResolvers } from '../__generated__/resolvers-types.js';
import { mayReadMessage } from './CardAuthorization.js';

export const Query: QueryResolvers = {
  card: async (_parent, { SvcCardId }, { cards, principal }) => {
    const card = await cards.load(SvcCardId);
    return card && maySeeUser(principal, card.SvcUserId) ? card : null;
  },
  cardAuthorization: async (_parent, { messageId }, { cardMessages, principal }) => {
    const message = await cardMessages.load(messageId);
    return message && mayReadMessage(principal, message) ? message : null;
  },
};
