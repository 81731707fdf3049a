import type { Collection, Db } from 'mongodb';

/** What a request the aggregator does not answer in time gets (the schema's DefaultStrategy). */
export const DEFAULT_STRATEGIES = ['approve', 'decline'] as const;

/** An aggregator's webhook for card authorizations. `_id` is the svcAggregatorId. */
export interface WebhookConfigDocument {
  _id: string;
  url: string;
  secret: string;
  defaultStrategy: (typeof DEFAULT_STRATEGIES)[number];
  timeoutMs: number;
  dtsUpdated: Date;
  /** Consecutive failed advice deliveries; reset by a delivered one. */
  webhookFailures?: number;
  /** Set when a run of failed deliveries disabled the endpoint (advices pause until it is enabled). */
  dtsWebhookDisabled?: Date | null;
}

export function webhookConfigsCollection(db: Db): Collection<WebhookConfigDocument> {
  return db.collection<WebhookConfigDocument>('webhookConfigs');
}
