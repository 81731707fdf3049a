import type { Filter } from 'mongodb';
import { maySeeUser, requireAggregator, requireUser } from '../../../../platform/security/authorize.js';
import { checkDeliveryStatus, deliveriesCollection, type DeliveryDocument } from '../../../../platform/messaging/deliveries.js';
import { checkPage, readPage } from '../../../../platform/graphql/paging.js';
import type { QueryResolvers } from '../__generated__/resolvers-types.js';
import { mayReadMessage } from './CardAuthorization.js';

export const Query: QueryResolvers = {
  card: async (_parent, { SvcCardId }, { cards, principal }) => {
    // Only end users (and internal services) ask for cards; anyone else is refused, whatever the id.
    if (principal.kind !== 'service') requireUser(principal);
    const card = await cards.load(SvcCardId);
    return card && maySeeUser(principal, card.SvcUserId) ? card : null;
  },
  cardWebhookDeliveries: (_parent, args, { principal, db }) => {
    const filter: Filter<DeliveryDocument> = { svcAggregatorId: requireAggregator(principal, 'read').svcAggregatorId };
    const status = checkDeliveryStatus(args.status);
    if (status) filter.status = status;
    return readPage(deliveriesCollection(db).find(filter).sort({ dtsCreated: -1, _id: -1 }), checkPage(args));
  },
  cardAuthorization: async (_parent, { messageId }, { cardMessages, principal }) => {
    // A message is its card user's and its program aggregator's; any other kind of caller is refused, whatever the id.
    if (principal.kind !== 'service' && principal.kind !== 'aggregator') requireUser(principal);
    const message = await cardMessages.load(messageId);
    return message && mayReadMessage(principal, message) ? message : null;
  },
};
