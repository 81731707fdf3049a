import type { Db } from 'mongodb';
import { openCheckingAccount, recordCardTransaction } from './card-transactions.js';
import { latestTransactions, modifyTransaction } from './transactions.js';

/** What follows the database in a feature function's parameters. */
type AfterDb<F> = F extends (db: Db, ...rest: infer R) => unknown ? R : never;

/** Accounts and their transactions: what end users read and change, and what the cards subgraph posts. */
export class AccountBook {
  constructor(private readonly db: Db) {}

  /** A user's latest transactions on one of their accounts. */
  latest(...args: AfterDb<typeof latestTransactions>) {
    return latestTransactions(this.db, ...args);
  }

  /** A user's change to one of their transactions (its note, its category). */
  modify(...args: AfterDb<typeof modifyTransaction>) {
    return modifyTransaction(this.db, ...args);
  }

  /** Posts a decided card message as a transaction, once by its message id. */
  recordCardTransaction(...args: AfterDb<typeof recordCardTransaction>) {
    return recordCardTransaction(this.db, ...args);
  }

  /** Opens the checking account a new card draws on. */
  openChecking(...args: AfterDb<typeof openCheckingAccount>) {
    return openCheckingAccount(this.db, ...args);
  }
}
