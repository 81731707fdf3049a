import type { Collection, Db } from 'mongodb';
import type { MinorUnits } from '../../../../platform/money/money.js';

/** A stored account. The full account number is never stored: only its last four digits. */
export interface AccountDocument {
  _id: string;
  SvcAccountId: string;
  SvcUserId: string;
  type: 'checking' | 'savings';
  name: string | null;
  currency: string;
  accountNumberLastFour: string;
  /** In `currency`'s minor units, as every stored amount. */
  balance: MinorUnits;
  availableBalance: MinorUnits;
  dtsOpened: Date | null;
  /** How many card postings have moved the balance (`card-postings.ts`); missing until the first. */
  postingSeq?: number;
  /** The ids of the transactions the last card posting moved the balance by. */
  lastPostings?: string[];
  /** Which call made the last card posting (a random id per call). */
  lastPostedBy?: string;
  /** Open holds of approved card authorizations (0100), as `<holdId>|<amount>|<expiry ms>` (`card-holds.ts`). */
  authorizationHolds?: string[];
  /** Holds of approved card purchases that payments has not posted yet; a completion's ends with the authorization's entry. */
  purchaseHolds?: string[];
  /** When the first listed hold expires (ms); missing when none is listed. */
  nextHoldExpiry?: number;
  /** How many times the holds have changed: the expiry sweep sets `nextHoldExpiry` only if they have not since it read them. */
  holdsSeq?: number;
}

export function accountsCollection(db: Db): Collection<AccountDocument> {
  return db.collection<AccountDocument>('accounts');
}

/** The indexes of every query on these collections. */
export async function createAccountIndexes(db: Db): Promise<void> {
  await accountsCollection(db).createIndex({ SvcUserId: 1 });
  await accountsCollection(db).createIndex({ nextHoldExpiry: 1 });
}
