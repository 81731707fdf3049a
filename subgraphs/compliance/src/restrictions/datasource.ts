import type { Collection, Db } from 'mongodb';
import type { MinorUnits } from '../../../../platform/money/money.js';

/** A stored transaction restriction of one user, or a platform default (SvcUserId null) for users without their own. */
export interface RestrictionDocument {
  _id: string;
  restrictionId: string;
  SvcUserId: string | null;
  restrictionName: string;
  description: string | null;
  txnTypes: string[];
  transactionCurrencies: string[];
  /** Bounds in the minor units of their currencies; a bound always has its currency. */
  fromAmount: MinorUnits | null;
  toAmount: MinorUnits | null;
  fromAmountCurrency: string | null;
  toAmountCurrency: string | null;
  isAllowed: boolean;
  isIgnoreRest: boolean;
  priority: number;
}

export function restrictionsCollection(db: Db): Collection<RestrictionDocument> {
  return db.collection<RestrictionDocument>('restrictions');
}

/** A transaction type of the platform and what it allows. `_id` is the type name. */
export interface TransactionTypeDocument {
  _id: string;
  name: string;
  isAllowed: boolean;
  sourceAccountTypes: string[];
  destinationAccountTypes: string[] | null;
  allowedTransactionCurrencies: string[];
}

/** A procedural restriction on a user (an AML review, a dormant account...): while it stands, every transaction is refused. */
export interface ProceduralRestrictionDocument {
  _id: string;
  SvcUserId: string;
  name: string;
  reason: string;
  dtsCreated: Date;
}

export function transactionTypesCollection(db: Db): Collection<TransactionTypeDocument> {
  return db.collection<TransactionTypeDocument>('transactionTypes');
}

export function proceduralRestrictionsCollection(db: Db): Collection<ProceduralRestrictionDocument> {
  return db.collection<ProceduralRestrictionDocument>('proceduralRestrictions');
}

/** The indexes of every query on these collections: a user's restrictions and procedural restrictions. */
export async function createRestrictionIndexes(db: Db): Promise<void> {
  await restrictionsCollection(db).createIndex({ SvcUserId: 1 });
  await proceduralRestrictionsCollection(db).createIndex({ SvcUserId: 1 });
}
