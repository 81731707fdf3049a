import type { CardWebhookDeliveryResolvers } from '../__generated__/resolvers-types.js';
import { globalId } from '../../../../platform/graphql/global-id.js';

export const CardWebhookDelivery: CardWebhookDeliveryResolvers = {
  id: (parent) => globalId('CardWebhookDelivery', parent._id),
  deliveryId: (delivery) => delivery._id,
  attempts: (delivery) => delivery.attempts,
};
