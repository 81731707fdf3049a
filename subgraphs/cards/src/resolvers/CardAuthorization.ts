import { maySeeUser } from '../../../../platform/security/authorize.js';
import { globalId, ownKey } from '../../../../platform/graphql/global-id.js';
import { fromMinor } from '../../../../platform/money/money.js';
import type { Principal } from '../../../../platform/contracts/principal.js';
import type { CardAuthorizationResolvers } from '../__generated__/resolvers-types.js';
import type { CardMessageDocument } from '../authorization/datasource.js';

/** A decided message is its card user's, and its card program's aggregator's. */
export function mayReadMessage(principal: Principal, message: CardMessageDocument): boolean {
  if (principal.kind === 'aggregator') return message.svcAggregatorId !== null && principal.svcAggregatorId === message.svcAggregatorId;
  return message.SvcUserId !== null && maySeeUser(principal, message.SvcUserId);
}

export const CardAuthorization: CardAuthorizationResolvers = {
  id: (parent) => globalId('CardAuthorization', parent._id),
  __resolveReference: async (reference, { cardMessages, principal }) => {
    // By its own key, or by its global id (node(id:), a client refetching the record).
    const messageId = ownKey(reference, 'CardAuthorization', 'messageId');
    if (messageId === null) return null;
    const message = await cardMessages.load(messageId);
    return message && mayReadMessage(principal, message) ? message : null;
  },
  messageId: (message) => message._id,
  approved: (message) => message.responseCode === '00',
  amount: (message) => fromMinor(message.amount, message.currency),
  // The card answers as itself: the user sees it; an aggregator's principal gets null from Card's own check.
  card: async (message, _args, { cards, principal }) => {
    const card = await cards.load(message.SvcCardId);
    return card && maySeeUser(principal, card.SvcUserId) ? card : null;
  },
  transaction: (message) => (message.transactionId ? { transactionId: message.transactionId } : null),
};
