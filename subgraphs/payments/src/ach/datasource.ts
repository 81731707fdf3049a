import type { Collection, Db } from 'mongodb';
import type { MinorUnits } from '../../../../platform/money/money.js';

/** Where an ACH payment stands (the schema's AchPaymentStatus). */
export const ACH_PAYMENT_STATUSES = ['Processing', 'Settled', 'Returned'] as const;

/** An ACH debit of an aggregator's merchant, and its return when the receiving bank returned it. */
export interface AchPaymentDocument {
  _id: string;
  svcTransactionId: string;
  svcAggregatorId: string;
  svcMerchantId: string | null;
  /** In cents: ACH moves US dollars. */
  amount: MinorUnits;
  currency: string;
  /** YYYY-MM-DD. */
  effectiveEntryDate: string;
  status: (typeof ACH_PAYMENT_STATUSES)[number];
  returnCode: string | null;
  dtsReturned: Date | null;
  dtsCreated: Date;
  dtsUpdated: Date;
  /** Where status changes are posted (signed with the merchant's webhook secret). */
  webhookUrl?: string | null;
}

export function achPaymentsCollection(db: Db): Collection<AchPaymentDocument> {
  return db.collection<AchPaymentDocument>('achPayments');
}

/** The indexes of every query on these collections. */
export async function createAchPaymentIndexes(db: Db): Promise<void> {
  await achPaymentsCollection(db).createIndex({ svcAggregatorId: 1, effectiveEntryDate: 1 });
}
