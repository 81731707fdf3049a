import type { Collection, Db } from 'mongodb';

/** A stored transaction restriction of one user. */
export interface RestrictionDocument {
  _id: string;
  restrictionId: string;
  SvcUserId: string;
  restrictionName: string;
  description: string | null;
  txnTypes: string[];
  transactionCurrencies: string[];
  fromAmount: number | null;
  toAmount: number | null;
  fromAmountCurrency: string | null;
  toAmountCurrency: string | null;
  isAllowed: boolean;
  isIgnoreRest: boolean;
  priority: number;
}

export function restrictionsCollection(db: Db): Collection<RestrictionDocument> {
  return db.collection<RestrictionDocument>('restrictions');
}
