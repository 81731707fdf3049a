import { maskRecipient } from '../../../../platform/messaging/notify.js';
import { globalId, ownKey } from '../../../../platform/graphql/global-id.js';
import type { Principal } from '../../../../platform/contracts/principal.js';
import type { DeliveryResolvers } from '../__generated__/resolvers-types.js';
import type { DeliveryDocument } from '../merchants/deliveries.js';
import { isInternalService } from '../../../../platform/security/service-scope.js';

/** A delivery is its aggregator's (base or confined token) and its merchant's; internal services see all. */
export function maySeeDelivery(principal: Principal, delivery: Pick<DeliveryDocument, 'svcAggregatorId' | 'svcMerchantId'>): boolean {
  return (
    isInternalService(principal) ||
    (principal.kind === 'aggregator' && principal.svcAggregatorId === delivery.svcAggregatorId) ||
    (principal.kind === 'merchant' && principal.svcMerchantId === delivery.svcMerchantId)
  );
}

export const Delivery: DeliveryResolvers = {
  id: (parent) => globalId('Delivery', parent._id),
  __resolveReference: async (reference, { deliveryLoader, principal }) => {
    // By its own key, or by its global id (node(id:), a client refetching the record).
    const deliveryId = ownKey(reference, 'Delivery', 'deliveryId');
    if (deliveryId === null) return null;
    const delivery = await deliveryLoader.load(deliveryId);
    return delivery && maySeeDelivery(principal, delivery) ? delivery : null;
  },
  deliveryId: (delivery) => delivery._id,
  // An email address is personal data: the log shows it masked.
  to: (delivery) => (delivery.kind === 'email' ? maskRecipient(delivery.to) : delivery.to),
  attempts: (delivery) => delivery.attempts,
};
