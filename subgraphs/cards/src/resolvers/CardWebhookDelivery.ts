import type { CardWebhookDeliveryResolvers } from '../__generated__/resolvers-types.js';

export const CardWebhookDelivery: CardWebhookDeliveryResolvers = {
  deliveryId: (delivery) => delivery._id,
  attempts: (delivery) => delivery.attempts,
};
