import type { Collection, Db } from 'mongodb';
import type { MinorUnits } from '../../../../platform/money/money.js';

/** An IOU between a lender (`SvcUserId`) and a borrower (`otherSvcUserId`), in one currency. */
export interface IouAccountDocument {
  _id: string;
  IOUAccountId: string;
  SvcUserId: string;
  otherSvcUserId: string;
  currency: string;
  dtsModified: Date;
}

/**
 * One IOU transaction. `lent` is signed from the lender's side: positive for a loan (the borrower
 * owes more), negative for a repayment; readers see it signed from their own side.
 */
export interface IouTransactionDocument {
  _id: string;
  IOUTransactionId: string;
  IOUAccountId: string;
  borrowerSvcUserId: string;
  lenderSvcUserId: string;
  /** In `currency`'s minor units. */
  lent: MinorUnits;
  currency: string;
  narrativeDebit: string | null;
  narrativeCredit: string | null;
  narrative: string | null;
  dts: Date;
  isPending: boolean;
  isActive: boolean;
  attachments: Record<string, unknown> | null;
  images: string[];
  recordedBySvcUserId: string;
}

export function iouAccountsCollection(db: Db): Collection<IouAccountDocument> {
  return db.collection<IouAccountDocument>('iouAccounts');
}

export function iouTransactionsCollection(db: Db): Collection<IouTransactionDocument> {
  return db.collection<IouTransactionDocument>('iouTransactions');
}

/** The indexes of every query on these collections. */
export async function createIouIndexes(db: Db): Promise<void> {
  await iouAccountsCollection(db).createIndex({ SvcUserId: 1, otherSvcUserId: 1 });
  await iouAccountsCollection(db).createIndex({ otherSvcUserId: 1 });
  await iouTransactionsCollection(db).createIndex({ IOUAccountId: 1, dts: 1 });
}
