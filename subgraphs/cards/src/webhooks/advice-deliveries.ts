import type { Db } from 'mongodb';
import { countEndpointOutcome, type DeliveryEndpoints } from '../../../../platform/messaging/deliveries.js';
import { webhookConfigsCollection } from './datasource.js';

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
    count: (delivery, delivered, disableAfter) => countEndpointOutcome(configs, delivery.svcAggregatorId, delivered, disableAfter),
  };
}
