import type { Db } from 'mongodb';
import { countEndpointOutcome, type DeliveryEndpoints } from '../../../../platform/messaging/deliveries.js';
import { merchantsCollection } from './datasource.js';
import { paymentLinksCollection } from '../payment-links/datasource.js';

export { checkDeliveryStatus, deliveriesCollection, Deliveries, type DeliveryDocument } from '../../../../platform/messaging/deliveries.js';

/**
 * The payments domain's endpoints: each merchant's webhook (its secret signs; a run of failures
 * disables it), and a payment link's delivery is wanted only while the link is still Sent.
 */
export function merchantEndpoints(db: Db): DeliveryEndpoints {
  const merchants = merchantsCollection(db);
  return {
    async endpointOf(delivery) {
      const merchant = delivery.svcMerchantId ? await merchants.findOne({ _id: delivery.svcMerchantId }) : null;
      return merchant ? { secret: merchant.webhookSecret, url: merchant.webhookUrl, disabled: Boolean(merchant.dtsWebhookDisabled) } : null;
    },
    async unwanted(delivery) {
      if (!delivery.whileLinkSent) return null;
      const link = await paymentLinksCollection(db).findOne({ _id: delivery.whileLinkSent }, { projection: { status: 1 } });
      return link?.status === 'Sent' ? null : `the link is ${link?.status ?? 'gone'}`;
    },
    count: async (delivery, delivered, disableAfter) => {
      if (delivery.svcMerchantId) await countEndpointOutcome(merchants, delivery.svcMerchantId, delivered, disableAfter);
    },
  };
}
