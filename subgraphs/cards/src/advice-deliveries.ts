import type { Db } from 'mongodb';
import type { DeliveryEndpoints } from '../../../platform/deliveries.js';
import { webhookConfigsCollection } from './datasources/cards.js';

/**
 * The cards domain's endpoints: each aggregator's configured card-authorization webhook (its
 * secret signs; a run of failures disables it until the aggregator enables it again).
 */
export function aggregatorEndpoints(db: Db): DeliveryEndpoints {
  const configs = webhookConfigsCollection(db);
  return {
    async endpointOf(delivery) {
      const config = await configs.findOne({ _id: delivery.svcAggregatorId });
      return config ? { secret: config.secret, url: config.url, disabled: Boolean(config.dtsWebhookDisabled) } : null;
    },
    unwanted: async () => null,
    async count(delivery, delivered, disableAfter) {
      const id = delivery.svcAggregatorId;
      if (delivered) {
        await configs.updateOne({ _id: id }, { $set: { webhookFailures: 0 } });
        return;
      }
      const counted = await configs.findOneAndUpdate({ _id: id }, { $inc: { webhookFailures: 1 } }, { returnDocument: 'after' });
      if (counted && (counted.webhookFailures ?? 0) >= disableAfter && !counted.dtsWebhookDisabled) {
        await configs.updateOne({ _id: id, dtsWebhookDisabled: null }, { $set: { dtsWebhookDisabled: new Date() } });
      }
    },
  };
}
