import type { Collection, Db } from 'mongodb';

/** A stored account. The full account number is never stored: only its last four digits. */
export interface AccountDocument {
  _id: string;
  SvcAccountId: string;
  SvcUserId: string;
  type: 'checking' | 'savings';
  name: string | null;
  currency: string;
  accountNumberLastFour: string;
  balance: number;
  availableBalance: number;
  dtsOpened: Date | null;
}

export function accountsCollection(db: Db): Collection<AccountDocument> {
  return db.collection<AccountDocument>('accounts');
}

/** The indexes of every query on these collections. */
export async function createAccountIndexes(db: Db): Promise<void> {
  await accountsCollection(db).createIndex({ SvcUserId: 1 });
}
