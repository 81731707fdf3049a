import type { Collection, Db } from 'mongodb';

/** A merchant of an aggregator. Its webhook secret signs its payment-link and ACH webhooks. */
export interface MerchantDocument {
  _id: string;
  svcMerchantId: string;
  svcAggregatorId: string;
  name: string;
  linkDelivery: 'email' | 'webhook';
  webhookUrl: string | null;
  webhookSecret: string;
  /** Consecutive failed webhook attempts; reset by a delivered one. */
  webhookFailures?: number;
  /** Set when a run of failures disabled the webhook endpoint. */
  dtsWebhookDisabled?: Date | null;
  /** Logo file ids (GridFS bucket `logos`) by type. */
  logos: Record<string, string>;
  dtsCreatedAt: Date;
  dtsUpdatedAt: Date;
}

export function merchantsCollection(db: Db): Collection<MerchantDocument> {
  return db.collection<MerchantDocument>('merchants');
}

/** The indexes of every query on these collections. */
export async function createMerchantIndexes(db: Db): Promise<void> {
  await merchantsCollection(db).createIndex({ svcAggregatorId: 1 });
}
