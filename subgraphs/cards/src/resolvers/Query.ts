import { maySeeUser, requireAggregator, requireUser } from '../../../../platform/security/authorize.js';
import type { QueryResolvers } from '../__generated__/resolvers-types.js';
import { offsetConnection } from '../../../../platform/graphql/paging.js';
import { mayReadMessage } from './CardAuthorization.js';
import { isInternalService } from '../../../../platform/security/service-scope.js';

export const Query: QueryResolvers = {
  card: async (_parent, { SvcCardId }, { cards, principal }) => {
    // Only end users (and internal services) ask for cards; anyone else is refused, whatever the id.
    if (!isInternalService(principal)) requireUser(principal);
    const card = await cards.load(SvcCardId);
    return card && maySeeUser(principal, card.SvcUserId) ? card : null;
  },
  cardWebhookDeliveries: (_parent, args, { principal, webhooks }) =>
    webhooks.deliveriesOf(requireAggregator(principal, 'read').svcAggregatorId, args),
  cardWebhookDeliveriesConnection: (_parent, { status, ...args }, { principal, webhooks }) => {
    const { svcAggregatorId } = requireAggregator(principal, 'read');
    return offsetConnection(args, (page) => webhooks.deliveriesOf(svcAggregatorId, { status, ...page }));
  },
  cardAuthorization: async (_parent, { messageId }, { cardMessages, principal }) => {
    // A message is its card user's and its program aggregator's; any other kind of caller is refused, whatever the id.
    if (!isInternalService(principal) && principal.kind !== 'aggregator') requireUser(principal);
    const message = await cardMessages.load(messageId);
    return message && mayReadMessage(principal, message) ? message : null;
  },
  cardAuthorizationSummary: (_parent, { since }, { principal, authorizationHistory }) => authorizationHistory.summary(principal, since),
  cardAuthorizationsConnection: (_parent, args, { principal, authorizationHistory }) => authorizationHistory.page(principal, args),
};
